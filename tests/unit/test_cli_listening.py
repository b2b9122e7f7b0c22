"""`tidelog agent`'s security settings as its flags and environment give them: the authorizer
(Kafka's authorizer.class.name, super.users), and a certificate handed over as PEM text, as an
ECS task receives its secrets (infra/agents.yaml)."""

from __future__ import annotations

import ssl
import stat
import tempfile
from pathlib import Path

import pytest

from tidelog import cli
from tidelog.cli import listening
from tidelog.kafka.tls import ServerTls
from tidelog.local.certs import LocalCa


def _agent_args(*flags: str):
    return cli.parser().parse_args(["agent", *flags])


def test_the_authorizer_is_off_unless_asked_for_and_then_kafkas(monkeypatch):
    monkeypatch.delenv("TIDELOG_KAFKA_AUTHORIZER", raising=False)
    assert listening.authorizer(_agent_args()) is None
    settings = listening.authorizer(
        _agent_args("--authorizer", "acls", "--super-users", "User:admin;User:ops")
    )
    assert settings.super_users == {"User:admin", "User:ops"}
    assert settings.allow_everyone_if_no_acl_found is False
    with pytest.raises(ValueError, match="need --authorizer acls"):
        listening.authorizer(_agent_args("--super-users", "User:admin"))


def test_the_environment_sets_the_authorizer_as_the_stack_does(monkeypatch):
    monkeypatch.setenv("TIDELOG_KAFKA_AUTHORIZER", "acls")
    monkeypatch.setenv("TIDELOG_SUPER_USERS", "")
    assert listening.authorizer(_agent_args()).super_users == frozenset()


def test_a_certificate_given_as_pem_text_is_served_from_private_files(monkeypatch, tmp_path):
    issued = LocalCa.create(tmp_path / "ca").issue_server("agent", ["127.0.0.1"])
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the files go, not /tmp
    monkeypatch.setenv("TIDELOG_SSL_CERT_PEM", Path(issued.certfile).read_text())
    monkeypatch.setenv("TIDELOG_SSL_KEY_PEM", Path(issued.keyfile).read_text())
    config = listening.tls_config(_agent_args())
    assert config is not None
    for path in (config.certfile, config.keyfile):
        assert stat.S_IMODE(Path(path).stat().st_mode) == 0o600
    assert stat.S_IMODE(Path(config.keyfile).parent.stat().st_mode) == 0o700
    assert Path(config.keyfile).parent.parent == tmp_path
    assert isinstance(ServerTls(config).context, ssl.SSLContext)


def test_half_a_pem_pair_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("TIDELOG_SSL_CERT_PEM", "-----BEGIN CERTIFICATE-----")
    monkeypatch.delenv("TIDELOG_SSL_KEY_PEM", raising=False)
    with pytest.raises(ValueError, match="TIDELOG_SSL_CERT_PEM and _KEY_PEM"):
        listening.tls_config(_agent_args())
