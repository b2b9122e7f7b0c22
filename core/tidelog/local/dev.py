"""``tidelog dev``: the embedded AWS stack and the tidelog API, in one process."""

from __future__ import annotations

import datetime
import json
import logging
import os
import signal
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.serving import BaseWSGIServer, make_server

from tidelog import __version__, collector, malloc, principals, runtime, threads
from tidelog.cluster import describe_cluster
from tidelog.kafka.agent import Agent
from tidelog.local import broker as broker_settings
from tidelog.local import sigv4
from tidelog.local.devtls import DevTls
from tidelog.local.emulator import Emulator
from tidelog.local.gateway import Gateway
from tidelog.local.paths import template_path
from tidelog.local.scheduler import Scheduler
from tidelog.local.sigv4 import Refusal, SignedRequest
from tidelog.local.stack import Stack, deploy
from tidelog.local.template import Template

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

CONSOLE_IDLE_S = 600.0  # the console's lag sampling pauses after this long without a request


@dataclass
class DevServer:
    """The running pieces; ``stop()`` shuts them down in order."""

    emulator: Emulator
    stack: Stack
    api: BaseWSGIServer
    thread: threading.Thread
    scheduler: Scheduler
    agent: Agent
    gateway: Gateway
    scratch: tempfile.TemporaryDirectory[str]  # staging, cache and the CA: in memory's terms
    tls: DevTls | None = None
    broker: Mapping[str, broker_settings.Given] = field(default_factory=dict)

    @property
    def api_url(self) -> str:
        return f"http://{self.api.host}:{self.api.port}"

    def stop(self) -> None:
        self.agent.stop()
        self.scheduler.stop()
        self.api.shutdown()
        self.api.server_close()
        self.thread.join(timeout=10)
        self.emulator.stop()
        self.scratch.cleanup()


def function_settings(
    where: Path, *, group_commit: bool, flush_ms: int, role_policies: bool
) -> dict[str, str]:
    """The settings `tidelog dev` gives its functions over the template's."""
    return {
        "TIDELOG_GROUP_COMMIT": "on" if group_commit else "off",
        "TIDELOG_FLUSH_MS": str(flush_ms),
        "TIDELOG_STAGING_DIR": str(where / "staging"),
        "TIDELOG_CACHE_DIR": str(where / "cache"),
        # Kafka's default, for quickstarts and test suites; the deployed stack's is off.
        "TIDELOG_AUTO_CREATE_TOPICS": os.environ.get("TIDELOG_AUTO_CREATE_TOPICS", "true"),
        "TIDELOG_LOCAL_IAM": "on" if role_policies else "off",
        # The emulator serves one call at a time: housekeeping's calls would queue ahead of
        # the agent's there, and gain nothing.
        "TIDELOG_HOUSEKEEPING_AT_ONCE": os.environ.get("TIDELOG_HOUSEKEEPING_AT_ONCE", "1"),
    }


def start(
    host: str,
    api_port: int,
    aws_port: int,
    *,
    flush_ms: int = 0,
    group_commit: bool = True,
    region: str = "us-east-1",
    schedule_speedup: float = 1.0,
    kafka_port: int = 9092,
    iam_keys: Mapping[str, str] | None = None,
    kafka_tls_port: int | None = None,
    tls_dir: Path | None = None,
    template_file: Path | None = None,
    role_policies: bool = True,
    broker: Mapping[str, broker_settings.Given] | None = None,
) -> DevServer:
    """This host is long-running, unlike a Lambda: produce requests share flushes (group
    commit, gathering for at least ``flush_ms`` once idle); without ``group_commit`` each is
    its own flush, as in Lambda.
    The template's schedules (housekeeping) run at their rates, ``schedule_speedup`` times
    faster. A Kafka agent listens on ``kafka_port`` over the same stack. With ``iam_keys``
    (access key id -> secret) the API demands SigV4 signatures by them, as the deployed
    stack's IAM authorization does. With ``kafka_tls_port`` an SSL listener serves there too,
    its certificate from a local CA made in ``tls_dir`` (else in the server's scratch).
    ``template_file`` replaces the packaged template. With ``role_policies`` every function's
    AWS calls, and the agent's, are held to its role's policies (tidelog.local.iam).
    ``broker``: Kafka's broker settings given (tidelog.local.broker), over the template's."""
    broker = broker or {}
    port = broker_settings.kafka_port(broker)
    if port.listeners is not None and kafka_tls_port is not None:
        raise broker_settings.BrokerSettingError("give listeners or --kafka-tls, not both")
    malloc.limit_arenas()
    # The stack is in memory and gone on exit, so is what its functions keep on disk.
    scratch = tempfile.TemporaryDirectory(prefix="tidelog-dev-")
    where = Path(scratch.name)
    tls = None
    if kafka_tls_port is not None:
        tls = DevTls.create(host, tls_dir or where / "tls")
    emulator = Emulator(host, aws_port)
    emulator.start()
    try:
        template = Template(template_file or template_path(), region=region)
        overrides = {
            **function_settings(
                where, group_commit=group_commit, flush_ms=flush_ms, role_policies=role_policies
            ),
            **broker_settings.environment(broker),
        }
        stack = deploy(template, emulator.url, overrides)
        if role_policies:
            emulator.enforce(stack.enforcer)
        runtime.reset()
        gateway = Gateway(
            template.routes(),
            stack.runtimes,
            binary_media_types=template.binary_media_types(),
            stage=str(template.resolve({"Ref": "StageName"})),
            responses=template.gateway_responses(),
            authorizer=iam_authorizer(iam_keys, region) if iam_keys is not None else None,
        )
        api = make_server(host, api_port, gateway, threaded=True)
        api.app = _with_console(gateway, api, signed=iam_keys is not None, region=region)
        # The agent runs in the Fargate task's role (none if the template deploys no agents).
        with principals.acting_as(frozenset({stack.agent_role} - {""})):
            if tls is not None and kafka_tls_port is not None:
                listeners = tls.listeners(kafka_port, kafka_tls_port)
                agent = Agent(host, kafka_port, listeners=listeners, tls=tls.config())
            else:
                agent = Agent(
                    host,
                    kafka_port,
                    listeners=port.listeners,
                    sasl_mechanisms=port.sasl_mechanisms,
                    authorizer=port.authorizer,
                )
            agent.start()
    except BaseException:
        emulator.stop()
        scratch.cleanup()
        raise
    thread = threading.Thread(target=api.serve_forever, name="tidelog-api", daemon=True)
    thread.start()
    scheduler = Scheduler.for_runtimes(list(stack.runtimes.values()), speedup=schedule_speedup)
    scheduler.start()
    collector.freeze_startup_objects()
    return DevServer(emulator, stack, api, thread, scheduler, agent, gateway, scratch, tls, broker)


def _with_console(
    gateway: Gateway, api: BaseWSGIServer, *, signed: bool, region: str
) -> WSGIApplication:
    """The gateway, with the console (docs/console.md) at /console, calling the API through
    its own proxy: unsigned, or signed with this environment's key under ``--iam-auth``."""
    try:
        from tidelog.client.http import Http  # noqa: PLC0415 - the client extra
        from tidelog.console.lag import LagSampler  # noqa: PLC0415
        from tidelog.console.server import Console  # noqa: PLC0415
    except ImportError:
        return gateway  # without the client extra: the API alone
    http = Http(f"http://{api.host}:{api.port}", sign=signed, region=region)
    # Lag is sampled from the first page on, and not while nobody has looked for ten minutes.
    sampler = LagSampler(http, idle_s=CONSOLE_IDLE_S)
    return DispatcherMiddleware(gateway, {"/console": Console(http, sampler=sampler)})


def run(
    host: str,
    api_port: int,
    aws_port: int,
    flush_ms: int,
    *,
    group_commit: bool = True,
    schedule_speedup: float = 1.0,
    kafka_port: int = 9092,
    iam_auth: bool = False,
    kafka_tls_port: int | None = None,
    tls_dir: Path | None = None,
    template_file: Path | None = None,
    role_policies: bool = True,
    overrides: Sequence[str] = (),
) -> None:
    """Start, print where everything runs, serve until SIGINT or SIGTERM. ``iam_auth``: the
    API takes only requests signed by this environment's AWS key (else ``test``/``test``).
    ``overrides``: Kafka broker settings, ``name=value`` (tidelog.local.broker)."""
    broker = broker_settings.gather(overrides, os.environ)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    for chatty in ("werkzeug", "botocore", "boto3"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    stopping = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    if schedule_speedup <= 0:
        raise OSError(f"--schedule-speedup must be positive, not {schedule_speedup}")
    server = start(
        host,
        api_port,
        aws_port,
        flush_ms=flush_ms,
        group_commit=group_commit,
        schedule_speedup=schedule_speedup,
        kafka_port=kafka_port,
        iam_keys=local_keys() if iam_auth else None,
        kafka_tls_port=kafka_tls_port,
        tls_dir=tls_dir,
        template_file=template_file,
        role_policies=role_policies,
        broker=broker,
    )
    try:
        info = describe_cluster(
            runtime.metadata_store(), clock_ms=runtime.clock_ms, random_bytes=runtime.random_bytes
        )
        print(banner(server, info.cluster_id), flush=True)
        if iam_auth:
            (key,) = local_keys()
            print(f"IAM authorization on: requests must be SigV4-signed by {key}", flush=True)
        threads.await_signal(stopping)
        print("tidelog dev: stopping", flush=True)
    finally:
        server.stop()


def local_keys(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The one key `tidelog dev --iam-auth` accepts: the environment's, else test/test."""
    key = environ.get("AWS_ACCESS_KEY_ID") or "test"
    return {key: environ.get("AWS_SECRET_ACCESS_KEY") or "test"}


def iam_authorizer(
    keys: Mapping[str, str], region: str
) -> Callable[[SignedRequest], Refusal | None]:
    def authorize(request: SignedRequest) -> Refusal | None:
        return sigv4.verify(request, keys.get, region, datetime.datetime.now(datetime.UTC))

    return authorize


def banner(server: DevServer, cluster_id: str) -> str:
    stack, api, aws = server.stack, server.api_url, server.emulator.url
    routes = "\n".join(f"    {r.method:6} {api}{r.path}" for r in stack.template.routes())
    schedules = "\n".join(
        f"  scheduled     {fn.logical_id} every {s.interval_s / server.scheduler.speedup:g} s "
        f"{json.dumps(s.event)}"
        for fn in stack.template.functions()
        for s in fn.schedules
    )
    listeners = ""
    if len(server.agent.ports) > 1 and server.tls is None:
        listeners = f"    listeners   {server.agent.listening}\n"
    tls = ""
    if server.tls is not None:
        port = server.agent.ports["SSL"]
        tls = server.tls.banner(f"{server.agent.advertised_host}:{port}")
    return f"""\
tidelog {__version__} dev - cluster {cluster_id}

  tidelog API   {api}
{routes}
  Kafka         {server.agent.address}   (bootstrap.servers for Kafka clients)
{listeners}{tls}{broker_settings.banner(server.broker)}{schedules}
  AWS emulator  {aws}   (S3, DynamoDB, Step Functions, Lambda; in memory, gone on exit)
    bucket {stack.bucket}   table {stack.table}

Try it:
  curl -s {api}/v1/cluster
  AWS_ENDPOINT_URL={aws} AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \\
    AWS_DEFAULT_REGION={stack.template.region} python3 -c \\
    "import boto3; print(boto3.client('dynamodb').scan(TableName='{stack.table}')['Items'])"

Ctrl-C stops it.
"""
