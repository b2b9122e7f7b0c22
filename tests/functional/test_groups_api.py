"""Consumer groups over HTTP against `tidelog dev`, with the assignment state machine really
executing on the emulator (its Lambda task runs the assignor function)."""

from __future__ import annotations

import time
import uuid

import pytest
from tests.functional.test_produce_api import call


def wait_stable(dev, group, member, generation=0, timeout=20):
    """Heartbeat until the member's generation is Stable; the answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = call(
            dev,
            "POST",
            f"/v1/groups/{group}/members/{member}/heartbeat",
            {"generation_id": generation},
        )
        if status == 200:
            return body
        assert (status, body["error"]) == (409, "REBALANCE_IN_PROGRESS"), (body, told(dev, group))
        generation = body["generation_id"]
        time.sleep(0.1)
    raise AssertionError(f"{group} did not become Stable: {told(dev, group)}")


def wait_all_stable(dev, group, members, timeout=20):
    """Heartbeat every member, as live members do, until all are Stable in one generation; each
    one's answer. (Waiting on one member at a time lets the others' sessions lapse: when the
    first member's generation is assigned before the second joins, the first must rejoin.)"""
    generations = dict.fromkeys(members, 0)
    answers: dict = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for member in members:
            status, body = call(
                dev,
                "POST",
                f"/v1/groups/{group}/members/{member}/heartbeat",
                {"generation_id": generations[member]},
            )
            assert status in (200, 409), (body, told(dev, group))
            if status == 409:
                assert body["error"] == "REBALANCE_IN_PROGRESS", (body, told(dev, group))
                answers.pop(member, None)
            else:
                answers[member] = body
            generations[member] = body["generation_id"]
        if (
            len(answers) == len(members)
            and len({a["generation_id"] for a in answers.values()}) == 1
        ):
            return answers
        time.sleep(0.1)
    raise AssertionError(f"{group} did not become Stable: {told(dev, group)}")


def told(dev, group):
    """What `tidelog dev` logged about the group, to tell why a rebalance took long."""
    return "\n".join(line for line in dev.output().splitlines() if group in line)[-6000:]


@pytest.fixture
def two_topics(dev):
    names = []
    for suffix in ("t0", "t1"):
        name = f"{suffix}-{uuid.uuid4().hex[:6]}"
        assert call(dev, "POST", "/v1/topics", {"name": name, "partitions": 3})[0] == 201
        names.append(name)
    return names


@pytest.mark.parametrize(
    ("assignor", "first", "second"),
    [
        ("range", {0: [0, 1], 1: [0, 1]}, {0: [2], 1: [2]}),
        ("roundrobin", {0: [0, 2], 1: [1]}, {0: [1], 1: [0, 2]}),
    ],
)
def test_the_seeds_examples_end_to_end(dev, two_topics, assignor, first, second):
    # seed 000: two consumers, two topics of three partitions; member ids sort as C0 < C1
    # because the first joiner's id is compared with the second's, so sort them by id.
    group = f"g-{uuid.uuid4().hex[:8]}"
    members = []
    for _ in range(2):
        status, body = call(
            dev,
            "POST",
            f"/v1/groups/{group}/members",
            {
                "topics": two_topics,
                "assignors": [assignor],
                "session_timeout_ms": 10_000,
                "rebalance_timeout_ms": 10_000,
            },
        )
        assert status == 200, body
        members.append(body["member_id"])
    c0, c1 = sorted(members)
    answers = wait_all_stable(dev, group, [c0, c1])
    # One generation if the second joined while the first gathered its members (no initial
    # delay here), else the next one.
    assert answers[c0]["generation_id"] == answers[c1]["generation_id"] in (1, 2)

    def by_index(answer):
        return {two_topics.index(a["topic"]): a["partitions"] for a in answer["assignment"]}

    assert by_index(answers[c0]) == first
    assert by_index(answers[c1]) == second
    status, described = call(dev, "GET", f"/v1/groups/{group}")
    assert (described["state"], described["protocol"]) == ("Stable", assignor)
    assert group in [g["group"] for g in call(dev, "GET", "/v1/groups")[1]["groups"]]


def test_commits_lag_and_resets(dev, two_topics):
    topic = two_topics[0]
    for i in range(5):
        records = [{"value": f"v{i}", "partition": 0}]
        assert call(dev, "POST", f"/v1/topics/{topic}/records", {"records": records})[0] == 200
    group = f"g-{uuid.uuid4().hex[:8]}"
    _, joined = call(
        dev,
        "POST",
        f"/v1/groups/{group}/members",
        {"topics": [topic], "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000},
    )
    member = joined["member_id"]
    generation = wait_stable(dev, group, member)["generation_id"]
    commit = {
        "member_id": member,
        "generation_id": generation,
        "offsets": [{"topic": topic, "partition": 0, "offset": 2, "metadata": "m"}],
    }
    status, body = call(dev, "POST", f"/v1/groups/{group}/offsets", commit)
    assert (status, body["offsets"][0]["offset"]) == (200, 2)
    stale = {**commit, "generation_id": generation - 1}
    status, body = call(dev, "POST", f"/v1/groups/{group}/offsets", stale)
    assert (status, body["error"], body["error_code"]) == (409, "ILLEGAL_GENERATION", 22)
    status, body = call(dev, "GET", f"/v1/groups/{group}/offsets")
    (row,) = body["offsets"]
    assert (row["offset"], row["high_watermark"], row["lag"]) == (2, 5, 3)
    assert row["lag_ms"] >= 0
    reset = {"to": "earliest"}
    status, body = call(dev, "POST", f"/v1/groups/{group}/offsets/reset", reset)
    assert (status, body["error"]) == (409, "NON_EMPTY_GROUP")
    assert call(dev, "DELETE", f"/v1/groups/{group}/members/{member}")[0] == 200
    status, body = call(dev, "POST", f"/v1/groups/{group}/offsets/reset", reset)
    assert status == 200, body
    assert [r["offset"] for r in body["offsets"]] == [0, 0, 0]
    status, body = call(
        dev, "POST", f"/v1/groups/{group}/members/{member}/heartbeat", {"generation_id": generation}
    )
    assert (status, body["error"]) == (404, "UNKNOWN_MEMBER_ID")


def test_bad_group_requests_are_4xx(dev):
    group = f"g-{uuid.uuid4().hex[:8]}"
    path = f"/v1/groups/{group}/members"
    assert call(dev, "POST", path, {"topics": ["x"], "assignors": ["nope"]})[1]["error"] == (
        "INCONSISTENT_GROUP_PROTOCOL"
    )
    status, body = call(dev, "POST", path, {"topics": ["x"], "session_timeout_ms": 1})
    assert (status, body["error"]) == (400, "INVALID_SESSION_TIMEOUT")
    assert call(dev, "POST", path, {"topics": ["x"], "surprise": 1})[0] == 400
    assert call(dev, "POST", path, {})[0] == 400
    commit = {"offsets": [{"topic": "x", "partition": 0, "offset": -1}]}
    assert call(dev, "POST", f"/v1/groups/{group}/offsets", commit)[0] == 400
    status, body = call(dev, "POST", f"/v1/groups/{group}/offsets/reset", {"to": "never"})
    assert status == 400


def test_an_empty_group_is_deleted_and_a_live_one_is_not(dev, two_topics):
    group = f"g-{uuid.uuid4().hex[:8]}"
    join = {"topics": two_topics, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000}
    member = call(dev, "POST", f"/v1/groups/{group}/members", join)[1]["member_id"]
    generation = wait_stable(dev, group, member)["generation_id"]
    commit = {
        "member_id": member,
        "generation_id": generation,
        "offsets": [{"topic": two_topics[0], "partition": 0, "offset": 0}],
    }
    assert call(dev, "POST", f"/v1/groups/{group}/offsets", commit)[0] == 200
    status, body = call(dev, "DELETE", f"/v1/groups/{group}")
    assert (status, body["error"]) == (409, "NON_EMPTY_GROUP")
    assert call(dev, "DELETE", f"/v1/groups/{group}/members/{member}")[0] == 200
    assert call(dev, "DELETE", f"/v1/groups/{group}") == (200, {"group": group, "deleted": True})
    assert call(dev, "GET", f"/v1/groups/{group}/offsets")[1]["offsets"] == []
    assert group not in [g["group"] for g in call(dev, "GET", "/v1/groups")[1]["groups"]]
    status, body = call(dev, "DELETE", f"/v1/groups/{group}")
    assert (status, body["error"]) == (404, "GROUP_ID_NOT_FOUND")
