"""Kafka itself as the referee: each scripted sequence (tests/conformance/sequences.py) is sent
to a real Apache Kafka broker and to tidelog's agent, and their answers compared field by field.
Every difference must be one docs/kafka.md lists with its reason, and every difference listed
there must still happen: the table is exactly what differs, no more and no less."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from tests.conformance.sequences import SEQUENCES
from tests.support import java_clients
from tests.support.differential import Difference, allowed, differences, run

KAFKA_PAGE = Path(__file__).resolve().parents[2] / "docs" / "kafka.md"


@pytest.fixture(scope="module")
def observed(broker, dev) -> dict[str, list[Difference]]:
    token = secrets.token_hex(4)
    return {
        name: list(
            differences(run(sequence, broker.bootstrap, token), run(sequence, dev.bootstrap, token))
        )
        for name, sequence in SEQUENCES.items()
    }


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_answers_are_kafkas_but_for_the_listed_differences(observed, name):
    table = allowed(KAFKA_PAGE)
    unlisted = [d for d in observed[name] if not any(row.matches(name, d) for row in table)]
    assert not unlisted, (
        f"{len(unlisted)} differences from Kafka that docs/kafka.md does not list:\n"
        + "\n".join(map(str, unlisted))
    )


def test_every_listed_difference_still_happens(observed):
    stale = [
        row
        for row in allowed(KAFKA_PAGE)
        if not any(row.matches(name, d) for name, found in observed.items() for d in found)
    ]
    assert not stale, "docs/kafka.md lists differences that no longer happen:\n" + "\n".join(
        f"{row.sequence} {row.path}" for row in stale
    )


def test_kafkas_java_clients_see_tidelog_as_they_see_kafka(broker, dev):
    """An admin client, an idempotent and a transactional producer (one transaction committed,
    one aborted) and read_committed consumers of both group protocols: the same program
    prints the same lines against both."""
    why = java_clients.missing()
    if why is not None:
        pytest.skip(why)
    topic = f"java-{secrets.token_hex(4)}"
    from_kafka = java_clients.run(broker.bootstrap, topic)
    assert from_kafka[-3:-1] == [
        "consume protocol=classic read=40 aborted=0 committed=50",
        "consume protocol=consumer read=40 aborted=0 committed=50",
    ]
    assert java_clients.run(dev.bootstrap, topic) == from_kafka
