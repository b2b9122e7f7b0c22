"""``tidelog agent``: Kafka's protocol over the log, in an event loop of its own.

The agent holds no state of its own: topics, offsets and records live in DynamoDB and S3, so
any number of agents may serve one cluster, and the HTTP API reads what the agent writes.
"""

from __future__ import annotations

import asyncio
import faulthandler
import functools
import json
import logging
import os
import signal
import socket
import threading
import urllib.request
from collections.abc import Sequence

from tidelog import __version__, aws, clusters, collector, malloc, runtime, threads
from tidelog.acl_store import AclStore
from tidelog.cluster import describe_cluster
from tidelog.credentials import Credentials
from tidelog.kafka.authorizer import Authorizer, AuthorizerSettings
from tidelog.kafka.aws_identity import IdentityVerifier, https_fetch
from tidelog.kafka.handlers import Handlers
from tidelog.kafka.listeners import PLAINTEXT, Listener, ListenerError
from tidelog.kafka.oauthbearer import OAUTHBEARER
from tidelog.kafka.placement import owner, txn_key
from tidelog.kafka.registry import Registry
from tidelog.kafka.sasl import MECHANISMS, SCRAM, SaslSettings
from tidelog.kafka.server import KafkaServer
from tidelog.kafka.tls import ServerTls, TlsConfig
from tidelog.transactions.sweeper import TimeoutSweeper

DEFAULT_PORT = 9092
STOP_REPORT_S = 10
"""An agent still stopping this long after SIGTERM prints every thread's stack."""


class Agent:
    """A Kafka listener on ``host:port`` served from a thread (port 0 picks a free one),
    registered in its cluster's table while it serves.

    ``advertised_host`` is what Metadata tells clients to connect to: the listening host, or
    this machine's name when it listens on every interface. ``zone`` is the availability zone
    it serves (clients in it are shown it first). ``listeners`` default to one plaintext
    listener on ``port``; an SSL listener takes its certificate from ``tls``.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        advertised_host: str | None = None,
        zone: str | None = None,
        listeners: Sequence[Listener] | None = None,
        tls: TlsConfig | None = None,
        sasl_mechanisms: Sequence[str] = SCRAM,
        plain_over_plaintext: bool = False,
        authorizer: AuthorizerSettings | None = None,
        max_reauth_ms: int = 0,
    ) -> None:
        self.host = host
        self.authorizer = (
            Authorizer(authorizer, AclStore(runtime.metadata_store()))
            if authorizer is not None
            else None
        )
        self.listeners = tuple(listeners or (Listener(PLAINTEXT, "", port),))
        check_tls(self.listeners, tls)
        check_sasl(sasl_mechanisms)
        self._sasl = (
            SaslSettings(
                tuple(sasl_mechanisms),
                Credentials(runtime.metadata_store()),
                plain_over_plaintext=plain_over_plaintext,
                identities=_identities() if OAUTHBEARER in sasl_mechanisms else None,
                max_reauth_s=max_reauth_ms / 1000 if max_reauth_ms else None,
            )
            if any(listener.sasl for listener in self.listeners)
            else None
        )
        self._tls = ServerTls(tls) if tls is not None else None  # bad files: refused now
        self.advertised_host = advertised_host or (
            socket.gethostname() if host in ("0.0.0.0", "::", "") else host  # noqa: S104
        )
        self.port = 0  # the first listener's
        self.ports: dict[str, int] = {}
        self.registry = Registry(
            runtime.metadata_store(), host=self.advertised_host, zone=zone or None
        )
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._servers: list[KafkaServer] = []
        self._sweeper = TimeoutSweeper(
            lambda: runtime.transactions().expire(mine=self._coordinates),
            interval_s=runtime.settings().transaction_cleanup_interval_ms / 1000,
        )

    def _coordinates(self, transactional_id: str) -> bool:
        """Whether FindCoordinator sends this id's clients here (among every live agent)."""
        return owner(self.registry.live(), txn_key(transactional_id)) == self.registry.me

    @property
    def address(self) -> str:
        return f"{self.advertised_host}:{self.port}"

    @property
    def listening(self) -> str:
        """Each listener as clients reach it: ``PLAINTEXT://host:9092,SSL://host:9093``."""
        return ",".join(f"{name}://{self.advertised_host}:{p}" for name, p in self.ports.items())

    def start(self) -> None:
        # The write and read paths claim their directories and recover staging now, before
        # any client is answered: a directory another process holds stops the start.
        runtime.appender()
        runtime.log_reader()
        self._thread = threads.thread(self._loop.run_forever, name="tidelog-agent")
        self._thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(30)
        self._sweeper.start()

    async def _listen(self) -> int:
        # Ports are known only once bound (port 0), and the registry must name them before
        # the first client is answered.
        handlers = Handlers(self.registry, self.authorizer)
        for listener in self.listeners:
            server = KafkaServer(
                handlers,
                listener=listener.name,
                tls=self._tls if listener.tls else None,
                sasl=self._sasl if listener.sasl else None,
            )
            self.ports[listener.name] = await server.bind(listener.host or self.host, listener.port)
            self._servers.append(server)
        port = self.ports[self.listeners[0].name]
        self.registry.start(port, self.ports)
        for server in self._servers:
            await server.serve()
        return port

    def stop(self) -> None:
        # Out of the registry first, as a Kafka broker's controlled shutdown moves its
        # leaderships before it closes: every agent's next Metadata answer sends clients
        # elsewhere, however long what is in flight here takes to end.
        self.registry.stop()
        self._sweeper.stop()
        for server in self._servers:
            asyncio.run_coroutine_threadsafe(server.stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)


def run(
    host: str,
    port: int,
    *,
    advertised_host: str | None,
    zone: str | None,
    cluster: str | None,
    flush_ms: int,
    listeners: Sequence[Listener] | None = None,
    tls: TlsConfig | None = None,
    sasl_mechanisms: Sequence[str] = SCRAM,
    plain_over_plaintext: bool = False,
    authorizer: AuthorizerSettings | None = None,
    max_reauth_ms: int = 0,
) -> None:
    """``tidelog agent``: find the cluster's bucket and table (unless the environment names
    them), serve until SIGINT or SIGTERM."""
    check_tls(listeners or (Listener(PLAINTEXT, "", port),), tls)  # before any call to AWS
    check_sasl(sasl_mechanisms)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    for chatty in ("botocore", "boto3"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    if not (os.environ.get("TIDELOG_TABLE") and os.environ.get("TIDELOG_BUCKET")):
        name = clusters.cluster_name(cluster)
        location = clusters.locate(
            name,
            endpoint=os.environ.get("AWS_ENDPOINT_URL"),
            cloudformation=lambda: aws.client("cloudformation"),
        )
        os.environ.update(TIDELOG_TABLE=location.table, TIDELOG_BUCKET=location.bucket)
        if location.state_machine and not os.environ.get("TIDELOG_ASSIGNMENT_STATE_MACHINE"):
            os.environ["TIDELOG_ASSIGNMENT_STATE_MACHINE"] = location.state_machine
    os.environ.update(TIDELOG_GROUP_COMMIT="on", TIDELOG_FLUSH_MS=str(flush_ms))
    runtime.reset()
    malloc.limit_arenas()
    stopping = threading.Event()
    signal.signal(signal.SIGINT, lambda signum, frame: stopping.set())
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
    agent = Agent(
        host,
        port,
        advertised_host=advertised_host,
        zone=zone or task_zone(),
        listeners=listeners,
        tls=tls,
        sasl_mechanisms=sasl_mechanisms,
        plain_over_plaintext=plain_over_plaintext,
        authorizer=authorizer,
        max_reauth_ms=max_reauth_ms,
    )
    agent.start()
    collector.freeze_startup_objects()
    try:
        me = agent.registry.me
        print(
            f"tidelog {__version__} agent - Kafka on {agent.listening} as node {me.node_id}"
            f"{f' in {me.rack}' if me.rack else ''} "
            f"(table {os.environ['TIDELOG_TABLE']}, bucket {os.environ['TIDELOG_BUCKET']})",
            flush=True,
        )
        threads.await_signal(stopping)
        print("tidelog agent: stopping", flush=True)
        # A stop that hangs says where: every thread's stack, once, to stderr.
        faulthandler.dump_traceback_later(STOP_REPORT_S)
    finally:
        agent.stop()


def _identities() -> IdentityVerifier:
    """OAUTHBEARER's verifier: tokens bound to this cluster's id, sent to STS (or to the
    endpoint the agent itself uses, ``tidelog dev``'s emulator)."""

    @functools.cache
    def cluster_id() -> str:
        store = runtime.metadata_store()
        return describe_cluster(
            store, clock_ms=runtime.clock_ms, random_bytes=runtime.random_bytes
        ).cluster_id

    return IdentityVerifier(cluster_id, https_fetch, endpoint=os.environ.get("AWS_ENDPOINT_URL"))


def check_tls(listeners: Sequence[Listener], tls: TlsConfig | None) -> None:
    """An SSL listener has TLS settings, and TLS settings have an SSL listener."""
    if any(listener.tls for listener in listeners) and tls is None:
        raise ListenerError("an SSL listener needs a certificate and key (--ssl-certfile)")
    if tls is not None and not any(listener.tls for listener in listeners):
        raise ListenerError("TLS settings given, but no SSL listener to use them")


def check_sasl(mechanisms: Sequence[str]) -> None:
    unknown = [m for m in mechanisms if m not in MECHANISMS]
    if unknown or not mechanisms:
        raise ListenerError(
            f"sasl.enabled.mechanisms: {', '.join(unknown) or 'none'}; the agent offers "
            f"{', '.join(MECHANISMS)}"
        )


def task_zone() -> str | None:
    """The availability zone of the ECS task this runs in (task metadata endpoint v4), or None
    outside ECS."""
    base = os.environ.get("ECS_CONTAINER_METADATA_URI_V4")
    if not base:
        return None
    try:
        with urllib.request.urlopen(f"{base}/task", timeout=2) as answer:  # noqa: S310 - ECS's
            zone = json.load(answer).get("AvailabilityZone")
    except (OSError, ValueError) as exc:
        logging.getLogger(__name__).warning("no zone from the ECS task metadata: %s", exc)
        return None
    return str(zone) if zone else None
