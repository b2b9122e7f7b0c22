"""The groups screens: every group with its lag, and one group's members, committed offsets, lag
in records and in time, and its lag over time, watched falling as its consumer catches up."""

from __future__ import annotations

import time
import uuid

from tests.browser.conftest import api, axe_violations

SAMPLE_MS = 300


def stable_member(dev, group, topic):
    member = api(dev, "POST", f"/v1/groups/{group}/members", {"topics": [topic]})["member_id"]
    generation, deadline = 0, time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            answer = api(
                dev,
                "POST",
                f"/v1/groups/{group}/members/{member}/heartbeat",
                {"generation_id": generation},
            )
            return member, answer["generation_id"]
        except Exception as refused:  # 409 REBALANCE_IN_PROGRESS names the next generation
            generation = __import__("json").loads(refused.read())["generation_id"]
            time.sleep(0.1)
    raise AssertionError(f"{group} never became Stable")


def commit(dev, group, member, generation, topic, offsets):
    api(
        dev,
        "POST",
        f"/v1/groups/{group}/offsets",
        {
            "member_id": member,
            "generation_id": generation,
            "offsets": [
                {"topic": topic, "partition": p, "offset": o} for p, o in enumerate(offsets)
            ],
        },
    )


def test_a_groups_lag_falls_as_its_consumer_catches_up(dev, page):
    mark = uuid.uuid4().hex[:6]
    topic, group = f"lagging-{mark}", f"readers-{mark}"
    api(dev, "POST", "/v1/topics", {"name": topic, "partitions": 2})
    for partition in (0, 1):
        records = [{"value": f"r{i}", "partition": partition} for i in range(5)]
        api(dev, "POST", f"/v1/topics/{topic}/records", {"records": records})
    member, generation = stable_member(dev, group, topic)
    commit(dev, group, member, generation, topic, [1, 2])  # 4 + 3 records behind

    page.goto(f"{dev.api_url}/console/?sample_ms={SAMPLE_MS}#/groups")
    row = page.locator("tbody tr", has=page.get_by_role("link", name=group))
    row.wait_for()
    assert row.locator("td").all_inner_texts()[1:] == ["Stable", "1", "7"]
    assert axe_violations(page) == []

    row.get_by_role("link", name=group).click()
    status = page.get_by_role("status")
    status.filter(has_text="total lag 7 records").wait_for()
    assert "Stable, generation" in status.inner_text()
    assert member in page.get_by_role("table", name=f"Members of {group}").inner_text()
    offsets = page.get_by_role("table", name=f"Committed offsets of {group}")
    lags = offsets.locator("tbody tr td:nth-child(5)").all_inner_texts()
    assert lags == ["4", "3"]

    commit(dev, group, member, generation, topic, [5, 5])  # caught up
    status.filter(has_text="total lag 0 records").wait_for(timeout=10_000)
    chart = page.locator("figure")
    assert int(chart.get_attribute("data-samples")) >= 2
    assert chart.locator("canvas").count() == 1  # drawn by the vendored uPlot
    assert axe_violations(page) == []


def test_a_group_nobody_joined_says_so(dev, page):
    page.goto(f"{dev.api_url}/console/#/groups/no-such-group-{uuid.uuid4().hex[:6]}")
    page.get_by_role("status").filter(has_text="No such group").wait_for()
    assert page.locator("figure").is_hidden()


def test_an_empty_groups_offsets_can_be_reset(dev, page):
    mark = uuid.uuid4().hex[:6]
    topic, group = f"replay-{mark}", f"replayers-{mark}"
    api(dev, "POST", "/v1/topics", {"name": topic, "partitions": 2})
    for partition in (0, 1):
        records = [{"value": f"r{i}", "partition": partition} for i in range(3)]
        api(dev, "POST", f"/v1/topics/{topic}/records", {"records": records})
    member, generation = stable_member(dev, group, topic)
    commit(dev, group, member, generation, topic, [3, 3])

    page.goto(f"{dev.api_url}/console/?sample_ms={SAMPLE_MS}#/groups/{group}")
    page.get_by_role("status").filter(has_text="total lag 0 records").wait_for()
    form = page.get_by_role("form", name="Reset the group's offsets")
    assert form.is_hidden()  # a member is in it: Kafka resets only an empty group's offsets

    api(dev, "DELETE", f"/v1/groups/{group}/members/{member}")
    form.wait_for()
    page.get_by_label("Move them to").select_option("earliest")
    form.get_by_role("button", name="Reset").click()
    page.get_by_role("status").filter(has_text="total lag 6 records").wait_for(timeout=10_000)
    assert axe_violations(page) == []
