"""The `tidelog` command's options and the functions' settings."""

from __future__ import annotations

import subprocess

import pytest

from tidelog import cli
from tidelog.local import dev
from tidelog.log import lifecycle
from tidelog.settings import ConfigurationError, Settings


def test_dev_ports_default_to_localstacks_and_8080(monkeypatch):
    monkeypatch.delenv("TIDELOG_API_PORT", raising=False)
    monkeypatch.delenv("TIDELOG_AWS_PORT", raising=False)
    args = cli.parser().parse_args(["dev"])
    assert (args.api_port, args.aws_port, args.host) == (8080, 4566, "127.0.0.1")


def test_dev_ports_come_from_the_environment_then_flags(monkeypatch):
    monkeypatch.setenv("TIDELOG_API_PORT", "9000")
    monkeypatch.setenv("TIDELOG_AWS_PORT", "9001")
    monkeypatch.setenv("TIDELOG_KAFKA_PORT", "9002")
    defaults = cli.parser().parse_args(["dev"])
    assert (defaults.api_port, defaults.aws_port, defaults.kafka_port) == (9000, 9001, 9002)
    args = cli.parser().parse_args(
        ["dev", "--api-port", "1", "--aws-port", "2", "--kafka-port", "3"]
    )
    assert (args.api_port, args.aws_port, args.kafka_port) == (1, 2, 3)


def test_a_bad_port_in_the_environment_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("TIDELOG_API_PORT", "http")
    with pytest.raises(SystemExit, match="TIDELOG_API_PORT='http' is not a port number"):
        cli.parser()


def test_make_run_passes_ports_through():
    dry = subprocess.run(
        ["make", "-n", "run", "API_PORT=1234", "AWS_PORT=5678", "KAFKA_PORT=9999"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "tidelog dev --api-port 1234 --aws-port 5678 --kafka-port 9999" in dry


def test_settings_name_what_is_missing():
    with pytest.raises(ConfigurationError, match="TIDELOG_TABLE, TIDELOG_BUCKET"):
        Settings.from_env({})
    settings = Settings.from_env({"TIDELOG_TABLE": "t", "TIDELOG_BUCKET": "b"})
    assert (settings.table, settings.bucket) == ("t", "b")


def test_flushes_in_flight_are_at_least_one():
    base = {"TIDELOG_TABLE": "t", "TIDELOG_BUCKET": "b"}
    assert Settings.from_env(base).flush_in_flight == 1
    assert Settings.from_env({**base, "TIDELOG_FLUSH_IN_FLIGHT": "3"}).flush_in_flight == 3
    for bad in ("0", "-1", "two"):
        with pytest.raises(ConfigurationError, match="TIDELOG_FLUSH_IN_FLIGHT"):
            Settings.from_env({**base, "TIDELOG_FLUSH_IN_FLIGHT": bad})


def test_a_rolls_at_once_are_at_least_one_and_one_in_tidelog_dev(monkeypatch, tmp_path):
    base = {"TIDELOG_TABLE": "t", "TIDELOG_BUCKET": "b"}
    assert Settings.from_env(base).housekeeping_at_once == lifecycle.AT_ONCE == 16
    assert (
        Settings.from_env({**base, "TIDELOG_HOUSEKEEPING_AT_ONCE": "4"}).housekeeping_at_once == 4
    )
    for bad in ("0", "-1", "many"):
        with pytest.raises(ConfigurationError, match="TIDELOG_HOUSEKEEPING_AT_ONCE"):
            Settings.from_env({**base, "TIDELOG_HOUSEKEEPING_AT_ONCE": bad})
    monkeypatch.delenv("TIDELOG_HOUSEKEEPING_AT_ONCE", raising=False)
    local = dev.function_settings(tmp_path, group_commit=True, flush_ms=0, role_policies=False)
    assert Settings.from_env({**base, **local}).housekeeping_at_once == 1
    monkeypatch.setenv("TIDELOG_HOUSEKEEPING_AT_ONCE", "8")
    local = dev.function_settings(tmp_path, group_commit=True, flush_ms=0, role_policies=False)
    assert Settings.from_env({**base, **local}).housekeeping_at_once == 8


def test_group_commit_is_its_own_switch_and_flushes_at_once_by_default(monkeypatch):
    """A Lambda's environment names neither: every request is its own flush. A long-running
    host turns group commit on, and its least window defaults to none."""
    base = {"TIDELOG_TABLE": "t", "TIDELOG_BUCKET": "b"}
    assert not Settings.from_env(base).group_commit
    grouped = Settings.from_env({**base, "TIDELOG_GROUP_COMMIT": "on"})
    assert (grouped.group_commit, grouped.flush_ms) == (True, 0)
    with pytest.raises(ConfigurationError, match="TIDELOG_GROUP_COMMIT='yes' is not one of"):
        Settings.from_env({**base, "TIDELOG_GROUP_COMMIT": "yes"})
    monkeypatch.delenv("TIDELOG_FLUSH_MS", raising=False)
    dev = cli.parser().parse_args(["dev"])
    assert (dev.flush_ms, dev.group_commit) == (0, True)
    alone = cli.parser().parse_args(["dev", "--flush-per-request", "--flush-ms", "5"])
    assert (alone.flush_ms, alone.group_commit) == (5, False)
    assert cli.parser().parse_args(["agent", "--flush-ms", "20"]).flush_ms == 20


def test_the_stores_run_under_a_named_fault_profile_or_none(monkeypatch):
    base = {"TIDELOG_TABLE": "t", "TIDELOG_BUCKET": "b"}
    assert Settings.from_env(base).faults == ""
    profiled = Settings.from_env(
        {**base, "TIDELOG_FAULTS": "aws-latency", "TIDELOG_FAULT_SEED": "7"}
    )
    assert (profiled.faults, profiled.fault_seed) == ("aws-latency", 7)
    with pytest.raises(ConfigurationError, match="TIDELOG_FAULTS='slow' is not one of aws-latency"):
        Settings.from_env({**base, "TIDELOG_FAULTS": "slow"})
    from tidelog import runtime
    from tidelog.storage.faults import AWS_LATENCY, FaultyMetadataStore, FaultyObjectStore
    from tidelog.storage.shared import SharedGetsStore

    for name, value in {**base, "TIDELOG_FAULTS": "aws-latency", "TIDELOG_FAULT_SEED": "7"}.items():
        monkeypatch.setenv(name, value)
    runtime.reset()
    try:
        shared, objects = runtime.metadata_store(), runtime.object_store()
        assert isinstance(shared, SharedGetsStore)  # its reads made at once go together
        meta = shared.inner
        assert isinstance(meta, FaultyMetadataStore)
        assert isinstance(objects, FaultyObjectStore)
        assert meta.plan is objects.plan  # one seeded source for both
        assert (meta.plan.seed, meta.plan.latency) == (7, AWS_LATENCY)
    finally:
        monkeypatch.delenv("TIDELOG_FAULTS")
        runtime.reset()


def test_a_consumer_group_default_outside_its_bounds_stops_the_start_as_on_kafka():
    base = {"TIDELOG_TABLE": "t", "TIDELOG_BUCKET": "b"}
    settings = Settings.from_env(base)
    assert (settings.consumer_min_session_timeout_ms, settings.consumer_max_session_timeout_ms) == (
        45_000,
        60_000,
    )
    short = {**base, "TIDELOG_CONSUMER_SESSION_TIMEOUT_MS": "12000"}
    with pytest.raises(ConfigurationError, match="TIDELOG_CONSUMER_SESSION_TIMEOUT_MS=12000 must"):
        Settings.from_env(short)
    lowered = {**short, "TIDELOG_CONSUMER_MIN_SESSION_TIMEOUT_MS": "1000"}
    assert Settings.from_env(lowered).consumer_session_timeout_ms == 12_000
    with pytest.raises(ConfigurationError, match="TIDELOG_CONSUMER_MAX_HEARTBEAT_INTERVAL_MS"):
        Settings.from_env({**base, "TIDELOG_CONSUMER_HEARTBEAT_INTERVAL_MS": "20000"})
