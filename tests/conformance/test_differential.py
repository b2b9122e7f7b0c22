"""Kafka itself as the referee: each scripted sequence (tests/conformance/sequences.py) is sent
to a real Apache Kafka broker and to tidelog's agent, and their answers compared field by field.
Every difference must be one docs/kafka.md lists with its reason, and every difference listed
there must still happen: the table is exactly what differs, no more and no less."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from tests.conformance.sequences import SEQUENCES
from tests.support import kafka_broker
from tests.support.differential import Difference, allowed, differences, run

KAFKA_PAGE = Path(__file__).resolve().parents[2] / "docs" / "kafka.md"


@pytest.fixture(scope="module")
def observed(dev) -> dict[str, list[Difference]]:
    why = kafka_broker.missing()
    if why is not None:
        pytest.skip(why)
    broker = kafka_broker.KafkaBroker()
    try:
        token = secrets.token_hex(4)
        return {
            name: list(
                differences(
                    run(sequence, broker.bootstrap, token), run(sequence, dev.bootstrap, token)
                )
            )
            for name, sequence in SEQUENCES.items()
        }
    finally:
        broker.stop()


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
