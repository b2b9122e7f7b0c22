"""Kafka clients logging in to tidelog's agents as AWS identities (SASL/OAUTHBEARER): the
token is an STS GetCallerIdentity request presigned with the caller's own credentials and bound
to the cluster (tidelog.kafka.aws_identity has the agent's side and the threat model).

confluent-kafka::

    from tidelog.client import aws_oauth_cb
    Producer({..., "security.protocol": "SASL_SSL", "sasl.mechanisms": "OAUTHBEARER",
              "oauth_cb": aws_oauth_cb()})

kafka-python (and aiokafka with ``aiokafka_token_provider()``)::

    from tidelog.client import kafka_python_token_provider
    KafkaProducer(..., security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER",
                  sasl_oauth_token_provider=kafka_python_token_provider())

Without a cluster id, the helpers ask the HTTP API for it once (``GET /v1/cluster``), signed
with the same credentials.
"""

from __future__ import annotations

import base64
import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import boto3

TOKEN_PREFIX = "tidelog-aws-v1."  # noqa: S105 - a format's name (tidelog.kafka.aws_identity)
CLUSTER_HEADER = "x-tidelog-cluster"
LIFETIME_S = 900  # the longest STS allows a presigned request


def aws_token(
    cluster_id: str,
    *,
    session: boto3.Session | None = None,
    lifetime_s: int = LIFETIME_S,
) -> tuple[str, float]:
    """A token for the cluster, and when it expires (seconds since the epoch). The session's
    credentials sign it (the default chain: environment, profile, instance or task role), at
    its region's STS endpoint (or $AWS_ENDPOINT_URL's, as every boto3 client)."""
    if session is None:
        import boto3  # noqa: PLC0415 - a third of importing tidelog.client, paid only here

        session = boto3.Session()
    sts = session.client("sts")

    def bind(request: Any, **_: Any) -> None:
        request.headers[CLUSTER_HEADER] = cluster_id

    sts.meta.events.register("before-sign.sts.GetCallerIdentity", bind)
    expires = time.time() + lifetime_s
    url = sts.generate_presigned_url(
        "get_caller_identity", Params={}, ExpiresIn=lifetime_s, HttpMethod="GET"
    )
    encoded = base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
    return TOKEN_PREFIX + encoded, expires


def aws_oauth_cb(
    cluster_id: str | None = None, *, session: boto3.Session | None = None, **api: Any
) -> Callable[[str], tuple[str, float]]:
    """confluent-kafka's ``oauth_cb``: a fresh token whenever librdkafka asks (it asks again
    before the last one expires, and logs in again on its connections, KIP-368). ``api`` are
    the Admin client's settings, used to learn the cluster id when it is not given."""
    found = _cluster_id(cluster_id, api)

    def oauth_cb(_config: str) -> tuple[str, float]:
        return aws_token(found(), session=session)

    return oauth_cb


def kafka_python_token_provider(
    cluster_id: str | None = None, *, session: boto3.Session | None = None, **api: Any
) -> Any:
    """kafka-python's ``sasl_oauth_token_provider`` (its AbstractTokenProvider, which it
    requires): a fresh token at every login."""
    from kafka.net.sasl.oauth import AbstractTokenProvider  # noqa: PLC0415 - theirs, on demand

    found = _cluster_id(cluster_id, api)

    class Provider(AbstractTokenProvider):  # type: ignore[misc]
        def token(self) -> str:
            return aws_token(found(), session=session)[0]

    return Provider()


def aiokafka_token_provider(
    cluster_id: str | None = None, *, session: boto3.Session | None = None, **api: Any
) -> Any:
    """aiokafka's ``sasl_oauth_token_provider``, whose ``token()`` it awaits."""
    from aiokafka.abc import AbstractTokenProvider  # noqa: PLC0415 - theirs, on demand

    found = _cluster_id(cluster_id, api)

    class Provider(AbstractTokenProvider):  # type: ignore[misc]
        async def token(self) -> str:
            return aws_token(found(), session=session)[0]

    return Provider()


def _cluster_id(given: str | None, api: dict[str, Any]) -> Callable[[], str]:
    """The cluster's id: ``given``, or asked of the HTTP API once, at the first login."""

    @functools.cache
    def cluster_id() -> str:
        if given:
            return given
        from tidelog.client.admin import Admin  # noqa: PLC0415 - only when it is asked

        with Admin(**api) as admin:
            return str(admin.cluster()["cluster_id"])

    return cluster_id
