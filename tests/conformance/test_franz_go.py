"""franz-go's own client tests (pkg/kgo, at the version tests/referees/franz-go/go.mod pins),
run as its maintainers run them against a cluster (``KGO_SEEDS``): against a real Kafka broker,
then against a ``tidelog dev`` of their own. Every test that passes against Kafka passes against
tidelog, but those NOT_ON_TIDELOG names with the reason (docs/testing.md has the same list).
Those are not run against tidelog, whose run takes one test at a time (``-test.parallel 1``):
the dev stack is one process on a machine of two cores."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from tests.support import devserver

ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / ".referees" / "franz-go" / "kgo.test"
SOURCE = BINARY.with_name("source")  # the package's directory: some tests read its files
RECORDS = 500  # KGO_TEST_RECORDS: what each chained-ETL test produces and consumes
NOT_SERVED = ("ShareGroup", "ShareSkips")  # share groups (KIP-932): tidelog serves none
NOT_ON_TIDELOG = {
    "TestConsumeRegex": "needs an internal topic (`__consumer_offsets`): tidelog keeps "
    "offsets in DynamoDB and has no internal topics",
    "Test848RegexBrokerResolves": "as TestConsumeRegex",
    "TestGroupETL": "six chains of three groups, four at a time (some 100 clients, each "
    "producing every record it reads), are more than `tidelog dev` serves on 2 cores: its "
    "storage calls queue behind the emulator's lock, flush commits take seconds, sessions lapse "
    "and members rejoin without end (docs/testing.md)",
    "TestTxnEtl": "as TestGroupETL, with transactions",
    "TestClient_Produce": "passes, in about 190 s (Kafka: 5 s): 20,000 produces from 50 "
    "goroutines to one partition, each waiting for its ack, through a 5 KB buffer, where each "
    "ack waits for S3 and a DynamoDB commit; too long for the suite",
}
OUTCOME = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+)", re.MULTILINE)


@pytest.fixture(scope="module")
def tidelog() -> Iterator[devserver.DevProcess]:
    """A dev of its own: franz-go's suite creates and deletes hundreds of topics and groups."""
    started = devserver.start("--schedule-speedup", "0.001", env=devserver.FAST_GROUPS)
    yield started
    started.stop()


def run(bootstrap: str, *args: str) -> tuple[dict[str, str], str]:
    """Each test's and subtest's outcome against ``bootstrap``, and what the failures said."""
    env = {
        **os.environ,
        "KGO_SEEDS": bootstrap,
        "KGO_TEST_RF": "1",
        "KGO_TEST_RECORDS": str(RECORDS),
        "KGO_LOG_LEVEL": "none",
    }
    done = subprocess.run(
        [str(BINARY), "-test.v", "-test.timeout", "8m", *args],
        env=env,
        cwd=SOURCE.read_text().strip(),
        capture_output=True,
        text=True,
        timeout=9 * 60,
        check=False,
    )
    found = {name: outcome for outcome, name in OUTCOME.findall(done.stdout)}
    assert found, f"no test ran against {bootstrap}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    said = [line for line in done.stdout.splitlines() if "_test.go:" in line or "--- FAIL" in line]
    return found, "\n".join(said[-60:])


def skipping(names: Sequence[str]) -> str:
    return "|".join(names)


def test_franz_gos_suite_passes_on_tidelog_where_it_passes_on_kafka(broker, tidelog):
    if not SOURCE.exists():
        pytest.skip(f"{BINARY} is not built: `make referees` builds it where Go is installed")
    on_kafka, _ = run(broker.bootstrap, "-test.skip", skipping(NOT_SERVED))
    on_tidelog, said = run(
        tidelog.bootstrap,
        "-test.parallel",
        "1",
        "-test.skip",
        skipping([*NOT_SERVED, *(f"^{name}$" for name in NOT_ON_TIDELOG)]),
    )
    passed = sorted(name for name, outcome in on_kafka.items() if outcome == "PASS")
    failed = [
        name
        for name in passed
        if on_tidelog.get(name) != "PASS" and name.split("/")[0] not in NOT_ON_TIDELOG
    ]
    assert not failed, (
        f"pass against Kafka, not against tidelog: {failed}\n{said}\n{tidelog.output()[-5000:]}"
    )
    assert all(name in passed for name in NOT_ON_TIDELOG), "a listed test no longer passes on Kafka"
    print(  # the figures docs/testing.md gives
        f"franz-go: {len(passed)} of {len(on_kafka)} tests and subtests pass against Kafka; "
        f"{sum(o == 'PASS' for o in on_tidelog.values())} of {len(on_tidelog)} run against "
        "tidelog pass"
    )
