"""The chaos checker against histories whose truth is known: Hypothesis builds valid histories
from a model log (no anomaly may be reported), then plants one anomaly of each kind (it must be
found). A checker that cannot fail proves nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidelog.chaos.checker import CHECKS, check
from tidelog.chaos.history import Op, read_history, write_history

GROUP = "readers"


@dataclasses.dataclass
class Model:
    """A valid history and the model log it came from."""

    ops: list[Op]
    log: dict[int, list[str]]  # partition -> values by offset
    acked: dict[str, tuple[int, int]]
    producers: dict[str, list[str]]  # process -> values in send order


def _op(process, type_, f, clock, **value):
    return Op(process, type_, f, value, next(clock))


@st.composite
def histories(draw: st.DrawFn) -> Model:
    clock = iter(range(1, 10**9))
    partitions = draw(st.integers(1, 3))
    names = [f"p{i}" for i in range(draw(st.integers(1, 3)))]
    counts = {n: draw(st.integers(4, 12)) for n in names}
    # Sends interleaved across producers, each producer's in its own order.
    order = draw(st.permutations([n for n in names for _ in range(counts[n])]))
    sent = dict.fromkeys(names, 0)
    log: dict[int, list[str]] = {p: [] for p in range(partitions)}
    ops: list[Op] = []
    acked: dict[str, tuple[int, int]] = {}
    producers: dict[str, list[str]] = {n: [] for n in names}
    for name in order:
        value = f"{name}-{sent[name]}"
        sent[name] += 1
        partition = draw(st.integers(0, partitions - 1))
        producers[name].append(value)
        ops.append(_op(name, "invoke", "send", clock, value=value))
        outcome = draw(st.sampled_from(["ok", "ok", "ok", "written", "unwritten", "fail"]))
        if outcome in ("ok", "written"):
            log[partition].append(value)
        if outcome == "ok":
            offset = len(log[partition]) - 1
            acked[value] = (partition, offset)
            ops.append(
                _op(name, "ok", "send", clock, value=value, partition=partition, offset=offset)
            )
        elif outcome == "fail":
            ops.append(_op(name, "fail", "send", clock, value=value, error="INVALID_RECORD"))
        elif draw(st.booleans()):  # an unknown outcome, or a process killed before it heard
            ops.append(_op(name, "info", "send", clock, value=value, error="timed out"))
    # An assign consumer reading every partition from the start, in polls of any size.
    ops.append(
        _op("a0", "ok", "assign", clock, partitions=list(log), **{"from": dict.fromkeys(log, 0)})
    )
    for partition, values in log.items():
        at = 0
        while at < len(values):
            step = draw(st.integers(1, 4))
            records = [[partition, o, values[o]] for o in range(at, min(at + step, len(values)))]
            ops.append(_op("a0", "ok", "poll", clock, records=records))
            at += step
    # A group whose members read up to its committed offsets, one re-reading after a rebalance.
    committed = {p: draw(st.integers(0, len(v))) for p, v in log.items()}
    for partition, upto in committed.items():
        member = f"g{partition % 2}"
        ops.append(_op(member, "ok", "assign", clock, partitions=[partition]))
        records = [[partition, o, log[partition][o]] for o in range(upto)]
        if records:
            ops.append(_op(member, "ok", "poll", clock, records=records, group=GROUP))
            ops.append(_op(member, "ok", "assign", clock, partitions=[partition]))
            ops.append(_op(member, "ok", "poll", clock, records=records[-1:], group=GROUP))
    ops.append(_op("final", "ok", "committed", clock, group=GROUP, offsets=committed))
    for reader in ("kafka", "http"):
        for partition, values in log.items():
            records = [[o, v] for o, v in enumerate(values)]
            ops.append(
                _op(
                    "final",
                    "ok",
                    "read",
                    clock,
                    reader=reader,
                    partition=partition,
                    records=records,
                )
            )
    return Model(ops, log, acked, producers)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(histories())
def test_a_valid_history_has_no_anomaly(model):
    result = check(model.ops)
    assert result.valid, result.summary()
    assert result.counts.get("send:ok", 0) == len(model.acked)


def rewrite(ops: list[Op], change: Callable[[Op], Op | None]) -> list[Op]:
    """Each op as ``change`` has it (None: left out)."""
    return [changed for op in ops if (changed := change(op)) is not None]


def with_value(op: Op, **changes) -> Op:
    return dataclasses.replace(op, value={**op.value, **changes})


def without(op: Op, drop: Callable[[list], bool]) -> Op | None:
    """A poll without the records ``drop`` picks; None if nothing is left of it."""
    records = [r for r in op.value["records"] if not drop(r)]
    return with_value(op, records=records) if records else None


def _reads(model: Model, change: Callable[[str, int, list], list]) -> list[Op]:
    """The ops with every final read's records passed through ``change(reader, partition,
    records)``."""
    return rewrite(
        model.ops,
        lambda op: (
            with_value(
                op,
                records=change(
                    op.value["reader"], op.value["partition"], list(op.value["records"])
                ),
            )
            if op.f == "read"
            else op
        ),
    )


def plant_lost(model, data):
    value = data.draw(st.sampled_from(sorted(model.acked)))
    return _reads(model, lambda _, __, records: [r for r in records if r[1] != value])


def plant_duplicate(model, data):
    value = data.draw(st.sampled_from(sorted(model.acked)))
    partition = model.acked[value][0]
    end = len(model.log[partition])
    return _reads(
        model, lambda _, p, records: [*records, [end, value]] if p == partition else records
    )


def plant_inconsistent_offset(model, data):
    value = data.draw(st.sampled_from(sorted(model.acked)))
    partition, offset = model.acked[value]

    def impostor(op):
        if op.f != "poll" or [partition, offset, value] not in op.value["records"]:
            return op
        records = [
            [p, o, "impostor" if (p, o) == (partition, offset) else v]
            for p, o, v in op.value["records"]
        ]
        return with_value(op, records=records)

    return rewrite(model.ops, impostor)


def plant_divergent_reads(model, data):
    value = data.draw(st.sampled_from(sorted(model.acked)))
    partition = model.acked[value][0]
    return _reads(
        model,
        lambda reader, p, records: records[:-1] if (reader, p) == ("http", partition) else records,
    )


def plant_offset_gap(model, data):
    """Every record after the first of a partition moved one offset on, in every reader."""
    partitions = [p for p, values in model.log.items() if len(values) >= 2]
    if not partitions:
        return None
    partition = data.draw(st.sampled_from(partitions))

    def moved(_, p, records):
        return records if p != partition else [records[0], *([o + 1, v] for o, v in records[1:])]

    return _reads(model, moved)


def plant_failed_but_present(model, data):
    value = data.draw(st.sampled_from(sorted(model.acked)))
    return rewrite(
        model.ops,
        lambda op: (
            dataclasses.replace(op, type="fail", value={"value": value, "error": "x"})
            if op.f == "send" and op.type == "ok" and op.value["value"] == value
            else op
        ),
    )


def plant_non_monotonic_send(model, data):
    """Two sends of one producer to one partition, acknowledged (and stored) in reverse."""
    pairs = [
        (a, b)
        for values in model.producers.values()
        for i, a in enumerate(values)
        for b in values[i + 1 :]
        if a in model.acked and b in model.acked and model.acked[a][0] == model.acked[b][0]
    ]
    if not pairs:
        return None
    a, b = data.draw(st.sampled_from(pairs))
    swap = {a: b, b: a}
    where = {a: model.acked[b], b: model.acked[a]}

    def swapped(op):
        value = op.value
        if op.f == "send" and op.type == "ok" and value["value"] in where:
            return with_value(op, offset=where[value["value"]][1])
        if op.f == "poll":
            return with_value(op, records=[[p, o, swap.get(v, v)] for p, o, v in value["records"]])
        if op.f == "read":
            return with_value(op, records=[[o, swap.get(v, v)] for o, v in value["records"]])
        return op

    return rewrite(model.ops, swapped)


def plant_non_monotonic_poll(model, data):
    polls = [i for i, op in enumerate(model.ops) if op.process == "a0" and op.f == "poll"]
    at = data.draw(st.sampled_from(polls))
    return [*model.ops[: at + 1], model.ops[at], *model.ops[at + 1 :]]


def plant_poll_skip(model, data):
    value = data.draw(st.sampled_from(sorted(model.acked)))
    partition, offset = model.acked[value]
    if offset == len(model.log[partition]) - 1:
        return None  # the last record: the consumer simply stopped before it
    return rewrite(
        model.ops,
        lambda op: (
            without(op, lambda r: (r[0], r[1]) == (partition, offset))
            if op.process == "a0" and op.f == "poll"
            else op
        ),
    )


def plant_group_skip(model, data):
    committed = next(op.value["offsets"] for op in model.ops if op.f == "committed")
    below = [(p, o) for p, c in committed.items() for o in range(c)]
    if not below:
        return None
    partition, offset = data.draw(st.sampled_from(below))
    return rewrite(
        model.ops,
        lambda op: (
            without(op, lambda r: (r[0], r[1]) == (partition, offset))
            if op.f == "poll" and op.value.get("group")
            else op
        ),
    )


def plant_client_fatal(model, data):
    fatal = Op("p0", "info", "fatal", {"error": "OUT_OF_ORDER_SEQUENCE_NUMBER"}, 10**9)
    return [*model.ops, fatal]


PLANTS = {
    "lost": plant_lost,
    "duplicate": plant_duplicate,
    "inconsistent-offset": plant_inconsistent_offset,
    "divergent-reads": plant_divergent_reads,
    "offset-gap": plant_offset_gap,
    "failed-but-present": plant_failed_but_present,
    "non-monotonic-send": plant_non_monotonic_send,
    "non-monotonic-poll": plant_non_monotonic_poll,
    "poll-skip": plant_poll_skip,
    "group-skip": plant_group_skip,
    "client-fatal": plant_client_fatal,
}


def test_every_check_has_a_planted_anomaly():
    assert len(PLANTS) == len(CHECKS)


@pytest.mark.parametrize("kind", sorted(PLANTS))
@SETTINGS
@given(model=histories(), data=st.data())
def test_a_planted_anomaly_is_found(kind, model, data):
    if not model.acked:
        return
    planted = PLANTS[kind](model, data)
    if planted is None:
        return  # this history has no place for it
    result = check(planted)
    assert kind in result.anomalies, (kind, result.summary())


def test_a_send_acknowledged_without_an_offset_must_still_be_in_the_log():
    # Kafka's DUPLICATE_SEQUENCE_NUMBER: delivered, at an offset the client is not told.
    sent = [
        Op("p0", "invoke", "send", {"value": "p0-0"}, 1),
        Op("p0", "ok", "send", {"value": "p0-0", "partition": 0, "offset": -1001}, 2),
    ]
    read = {"reader": "kafka", "partition": 0, "records": [[0, "p0-0"]]}
    assert check([*sent, Op("final", "ok", "read", read, 3)]).valid
    nothing = {**read, "records": []}
    assert "lost" in check([*sent, Op("final", "ok", "read", nothing, 3)]).anomalies


def test_unknown_sends_that_were_written_are_reported_as_information():
    ops = [
        Op("p0", "invoke", "send", {"value": "p0-0"}, 1),
        Op("p0", "invoke", "send", {"value": "p0-1"}, 2),  # killed before it heard
        Op("final", "ok", "read", {"reader": "kafka", "partition": 0, "records": [[0, "p0-1"]]}, 3),
    ]
    result = check(ops)
    assert result.valid
    assert result.unseen_but_present == 1
    assert result.counts["send:info"] == 2


def test_a_history_file_round_trips_and_a_torn_last_line_is_dropped(tmp_path):
    ops = [
        Op("p0", "invoke", "send", {"value": "p0-0"}, 5),
        Op(
            "p0", "ok", "send", {"value": "p0-0", "partition": 0, "offset": 0}, 3
        ),  # clock stepped back
    ]
    first, second = tmp_path / "p0.jsonl", tmp_path / "nemesis.jsonl"
    write_history(first, ops)
    with first.open("a") as out:
        out.write('{"process": "p0", "type": "ok", "f": "se')
    write_history(second, [Op("nemesis", "invoke", "fault", {"fault": "kill"}, 4)])
    merged = read_history([first, second])
    assert [op for op in merged if op.process == "p0"] == ops  # its own order, whatever the clock
    assert len(merged) == 3
