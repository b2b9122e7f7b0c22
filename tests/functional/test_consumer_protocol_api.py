"""KIP-848's consumer protocol over HTTP (``POST /v1/groups/{group}/heartbeat``) against
`tidelog dev`: two members reconcile to the state machine's target without a barrier, a
partition moves only once its owner has said it gave it up, commits are fenced by member
epoch, and the group describes itself as a consumer group."""

from __future__ import annotations

import time
import uuid

from tests.functional.test_groups_api import told
from tests.functional.test_produce_api import call


def beat(dev, group, body):
    status, answer = call(dev, "POST", f"/v1/groups/{group}/heartbeat", body)
    assert status == 200, (answer, told(dev, group))
    return answer


def partitions(assignment) -> set[tuple[str, int]]:
    return {(a["topic"], p) for a in assignment for p in a["partitions"]}


def step(dev, group, member, epoch, holding):
    """One heartbeat as a client sends it: saying what it owns; it gives up at once what it
    is no longer assigned, and takes what it is. Its epoch and partitions after."""
    said = [{"topic": t, "partitions": [p]} for t, p in sorted(holding)]
    answer = beat(dev, group, {"member_id": member, "member_epoch": epoch, "owned": said})
    if answer["assignment"] is not None:
        holding = partitions(answer["assignment"])
    return answer["member_epoch"], holding


def settle(dev, group, member, epoch, holding, want, timeout=30):
    """Heartbeats until the member holds ``want`` partitions."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        epoch, holding = step(dev, group, member, epoch, holding)
        if len(holding) == want:
            return epoch, holding
        time.sleep(0.2)
    raise AssertionError(f"{member} never held {want}: {told(dev, group)}")


def test_two_members_share_a_topic_without_a_barrier(dev):
    topic = f"kip848-{uuid.uuid4().hex[:6]}"
    assert call(dev, "POST", "/v1/topics", {"name": topic, "partitions": 4})[0] == 201
    group = f"g-{uuid.uuid4().hex[:8]}"
    first = beat(dev, group, {"member_epoch": 0, "topics": [topic], "rebalance_timeout_ms": 30_000})
    a, a_epoch = first["member_id"], first["member_epoch"]
    # The target comes from the state machine: until then the member has nothing, yet.
    assert (a_epoch, first["assignment"], first["state"]) == (1, [], "assigning")
    assert first["heartbeat_interval_ms"] > 0
    a_epoch, a_holds = settle(dev, group, a, a_epoch, set(), 4)
    second = beat(dev, group, {"member_id": "b-1", "member_epoch": 0, "topics": [topic]})
    assert second["member_id"] == "b-1"  # named by the member, as Kafka's v1
    b_epoch, b_holds = second["member_epoch"], set()
    # "b" gets nothing "a" still owns; "a" gives two up, then "b" gets them.
    deadline = time.monotonic() + 30
    while (len(a_holds), len(b_holds)) != (2, 2):
        assert time.monotonic() < deadline, told(dev, group)
        a_epoch, a_holds = step(dev, group, a, a_epoch, a_holds)
        b_epoch, b_holds = step(dev, group, "b-1", b_epoch, b_holds)
        assert not a_holds & b_holds
        time.sleep(0.2)
    assert len(a_holds | b_holds) == 4
    described = call(dev, "GET", f"/v1/groups/{group}")[1]
    assert (described["type"], described["state"], described["protocol"]) == (
        "consumer",
        "Stable",
        "uniform",
    )
    assert {m["member_id"]: m["member_epoch"] for m in described["members"]} == {
        a: a_epoch,
        "b-1": b_epoch,
    }
    # Commits carry the member epoch (STALE_MEMBER_EPOCH otherwise).
    (t, p) = sorted(a_holds)[0]
    commit = {"member_id": a, "offsets": [{"topic": t, "partition": p, "offset": 0}]}
    stale = call(dev, "POST", f"/v1/groups/{group}/offsets", {**commit, "generation_id": 0})
    assert (stale[0], stale[1]["error"]) == (409, "STALE_MEMBER_EPOCH")
    fresh = call(dev, "POST", f"/v1/groups/{group}/offsets", {**commit, "generation_id": a_epoch})
    assert (fresh[0], fresh[1]["offsets"][0]["offset"], fresh[1]["offsets"][0]["error"]) == (
        200,
        0,
        None,
    )
    # Leaving (-1) frees "a"'s partitions for "b".
    left = beat(dev, group, {"member_id": a, "member_epoch": -1})
    assert (left["member_epoch"], left["state"]) == (-1, "left")
    settle(dev, group, "b-1", b_epoch, b_holds, 4)


def test_bad_consumer_heartbeats_are_kafkas_errors(dev):
    group = f"g-{uuid.uuid4().hex[:8]}"
    path = f"/v1/groups/{group}/heartbeat"
    cases = [
        ({"member_epoch": 0}, 400, "INVALID_REQUEST"),  # no subscription
        ({"member_epoch": 0, "topics": ["x"], "assignor": "sticky"}, 400, None),
        ({"member_id": "nobody", "member_epoch": 3}, 404, "UNKNOWN_MEMBER_ID"),
        ({"member_epoch": -3}, 400, None),
        ({"member_epoch": 0, "topics": ["x"], "surprise": 1}, 400, None),
    ]
    for body, status, error in cases:
        got, answer = call(dev, "POST", path, body)
        assert got == status, (body, answer)
        if error is not None:
            assert answer["error"] == error, (body, answer)
    joined = call(dev, "POST", path, {"member_epoch": 0, "topics": ["x"]})[1]
    ahead = {"member_id": joined["member_id"], "member_epoch": joined["member_epoch"] + 5}
    status, answer = call(dev, "POST", path, ahead)
    assert (status, answer["error"]) == (409, "FENCED_MEMBER_EPOCH")
