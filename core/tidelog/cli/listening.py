"""`tidelog agent`'s listeners and TLS options, Kafka's settings under their names."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from tidelog.kafka.listeners import CLIENT_AUTH, Listener, parse
from tidelog.kafka.principals import DEFAULT_RULES

if TYPE_CHECKING:
    from tidelog.kafka.authorizer import AuthorizerSettings
    from tidelog.kafka.tls import TlsConfig


def add_options(command: argparse.ArgumentParser) -> None:
    env = os.environ.get
    command.add_argument(
        "--listeners",
        default=env("TIDELOG_KAFKA_LISTENERS") or None,
        help="Kafka's listeners, e.g. PLAINTEXT://:9092,SSL://:9093; an empty host binds "
        "--host (default $TIDELOG_KAFKA_LISTENERS, else PLAINTEXT on --kafka-port)",
    )
    command.add_argument(
        "--sasl-enabled-mechanisms",
        default=env("TIDELOG_SASL_ENABLED_MECHANISMS") or "SCRAM-SHA-256,SCRAM-SHA-512",
        help="Kafka's sasl.enabled.mechanisms, for SASL listeners: SCRAM-SHA-256, "
        "SCRAM-SHA-512, PLAIN, OAUTHBEARER (AWS identities) (default "
        "$TIDELOG_SASL_ENABLED_MECHANISMS, else SCRAM-SHA-256,SCRAM-SHA-512)",
    )
    command.add_argument(
        "--connections-max-reauth-ms",
        type=int,
        default=int(env("TIDELOG_CONNECTIONS_MAX_REAUTH_MS") or 0),
        help="Kafka's connections.max.reauth.ms: a SASL session lasts at most this long, then "
        "its client logs in again on the connection (KIP-368); 0: as long as its credential "
        "(default $TIDELOG_CONNECTIONS_MAX_REAUTH_MS, else 0)",
    )
    command.add_argument(
        "--sasl-plain-over-plaintext",
        action="store_true",
        default=env("TIDELOG_SASL_PLAIN_OVER_PLAINTEXT") == "true",
        help="offer PLAIN on SASL_PLAINTEXT listeners too, where passwords cross the network "
        "in the clear (default: PLAIN only over TLS)",
    )
    acls = command.add_argument_group("Authorization by Kafka's ACLs (docs/security.md)")
    acls.add_argument(
        "--authorizer",
        choices=("none", "acls"),
        default=env("TIDELOG_KAFKA_AUTHORIZER") or "none",
        help="Kafka's authorizer.class.name: acls authorizes every request by the cluster's "
        "ACLs; none lets every caller do everything (default $TIDELOG_KAFKA_AUTHORIZER, "
        "else none)",
    )
    acls.add_argument(
        "--super-users",
        default=env("TIDELOG_SUPER_USERS") or "",
        help="Kafka's super.users, allowed everything: User:admin;User:ops (default "
        "$TIDELOG_SUPER_USERS)",
    )
    acls.add_argument(
        "--allow-everyone-if-no-acl-found",
        action="store_true",
        default=env("TIDELOG_ALLOW_EVERYONE_IF_NO_ACL_FOUND") == "true",
        help="Kafka's allow.everyone.if.no.acl.found: a resource with no ACL is open to all "
        "(default: closed)",
    )
    tls = command.add_argument_group("TLS, for an SSL listener (PEM files, reloaded on change)")
    tls.add_argument(
        "--ssl-certfile",
        default=env("TIDELOG_SSL_CERTFILE") or None,
        help="the agent's certificate chain (default $TIDELOG_SSL_CERTFILE; or the PEM itself "
        "in $TIDELOG_SSL_CERT_PEM, with its key in $TIDELOG_SSL_KEY_PEM)",
    )
    tls.add_argument(
        "--ssl-keyfile",
        default=env("TIDELOG_SSL_KEYFILE") or None,
        help="its private key (default $TIDELOG_SSL_KEYFILE; its password in "
        "$TIDELOG_SSL_KEY_PASSWORD)",
    )
    tls.add_argument(
        "--ssl-cafile",
        default=env("TIDELOG_SSL_CAFILE") or None,
        help="CAs that sign client certificates, for mTLS (default $TIDELOG_SSL_CAFILE)",
    )
    tls.add_argument(
        "--ssl-client-auth",
        choices=CLIENT_AUTH,
        default=env("TIDELOG_SSL_CLIENT_AUTH") or "none",
        help="Kafka's ssl.client.auth (default $TIDELOG_SSL_CLIENT_AUTH, else none)",
    )
    tls.add_argument(
        "--ssl-principal-mapping-rules",
        default=env("TIDELOG_SSL_PRINCIPAL_MAPPING_RULES") or DEFAULT_RULES,
        help="Kafka's ssl.principal.mapping.rules: client certificate subjects to principal "
        "names (default $TIDELOG_SSL_PRINCIPAL_MAPPING_RULES, else DEFAULT)",
    )


def authorizer(args: argparse.Namespace) -> AuthorizerSettings | None:
    if args.authorizer == "none":
        if args.super_users or args.allow_everyone_if_no_acl_found:
            raise ValueError(
                "--super-users and --allow-everyone-if-no-acl-found need --authorizer acls"
            )
        return None
    from tidelog.kafka.authorizer import AuthorizerSettings, parse_super_users  # noqa: PLC0415

    return AuthorizerSettings(
        super_users=parse_super_users(args.super_users),
        allow_everyone_if_no_acl_found=args.allow_everyone_if_no_acl_found,
    )


def sasl_mechanisms(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(m.strip() for m in args.sasl_enabled_mechanisms.split(",") if m.strip())


def listeners(args: argparse.Namespace) -> tuple[Listener, ...] | None:
    return parse(args.listeners) if args.listeners else None


def tls_config(args: argparse.Namespace) -> TlsConfig | None:
    certfile, keyfile = args.ssl_certfile, args.ssl_keyfile
    pem = os.environ.get("TIDELOG_SSL_CERT_PEM"), os.environ.get("TIDELOG_SSL_KEY_PEM")
    if not (certfile or keyfile) and any(pem):
        certfile, keyfile = _pem_files(*pem)
    if not (certfile or keyfile):
        return None
    if not (certfile and keyfile):
        raise ValueError("TLS needs both --ssl-certfile and --ssl-keyfile")
    from tidelog.kafka.tls import TlsConfig  # noqa: PLC0415 - the kafka extra, on demand

    return TlsConfig(
        certfile=certfile,
        keyfile=keyfile,
        password=os.environ.get("TIDELOG_SSL_KEY_PASSWORD") or None,
        cafile=args.ssl_cafile,
        client_auth=args.ssl_client_auth,
        principal_rules=args.ssl_principal_mapping_rules,
    )


def _pem_files(certificate: str | None, key: str | None) -> tuple[str, str]:
    """The certificate and key an ECS task is given as secrets ($TIDELOG_SSL_CERT_PEM and
    $TIDELOG_SSL_KEY_PEM, infra/agents.yaml), written where only this user reads them: the
    agent reads files (and reloads them when they change; these change with a new task)."""
    if not (certificate and key):
        raise ValueError("TLS from the environment needs both TIDELOG_SSL_CERT_PEM and _KEY_PEM")
    directory = Path(tempfile.mkdtemp(prefix="tidelog-tls-"))  # 0700
    paths = []
    for name, text in (("agent.pem", certificate), ("agent.key", key)):
        path = directory / name
        path.touch(mode=0o600)
        path.write_text(text)
        paths.append(str(path))
    return paths[0], paths[1]
