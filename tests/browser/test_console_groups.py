"""The groups screens: every group with its lag, and one group's members, committed offsets, lag
in records and in time, and its lag over time (sampled by the console), watched falling as a
real consumer catches up."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
import uuid

from playwright.sync_api import expect
from tests.browser.conftest import api, axe_violations

from tidelog.client import Consumer

REFRESH_MS = 300
FAST = {"session.timeout.ms": 6_000, "heartbeat.interval.ms": 200, "fetch.max.wait.ms": 200}


def lag_history(console, group):
    request = urllib.request.Request(
        f"{console}lag?group={group}", headers={"X-Tidelog-Console": "1"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())["samples"]


def sampled_until_caught_up(console, group, timeout=30):
    """The group's sampled lags once the last of them is 0, or at the deadline. The sampler runs
    on a clock of its own, each sample reading every group of the stack, so its last sample can
    be from before the commit the page already shows."""
    deadline = time.monotonic() + timeout
    while True:
        lags = [lag for _, lag in lag_history(console, group)]
        if (lags and lags[-1] == 0) or time.monotonic() > deadline:
            return lags
        time.sleep(0.1)


PACED_COMMITS = 3  # enough for the lag to be seen falling, step by step


def sampled(console, group, lag, timeout=30):
    """Wait until the console's newest sample of the group's lag is ``lag``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        samples = lag_history(console, group)
        if samples and samples[-1][1] == lag:
            return
        time.sleep(0.05)


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
            generation = json.loads(refused.read())["generation_id"]
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


def test_a_groups_lag_falls_as_its_consumer_catches_up(dev, console, page):
    mark = uuid.uuid4().hex[:6]
    topic, group = f"lagging-{mark}", f"readers-{mark}"
    api(dev, "POST", "/v1/topics", {"name": topic, "partitions": 2})
    records = [{"value": f"r{i}", "partition": i % 2} for i in range(40)]
    api(dev, "POST", f"/v1/topics/{topic}/records", {"records": records})
    done = threading.Event()
    watching = threading.Event()  # the page shows the group: its lag samples start
    failed = []

    def catch_up():
        """A real consumer, slow on purpose: two records a poll, each poll committed, the
        first commit only once the page watches (a loaded machine once showed the page so
        late that the consumer had nearly caught up before its first sample), and each of the
        first three only once the console has sampled the one before: its sampler reads every
        group of the stack, and late in a full run, with hundreds of them, it once sampled
        only twice while the consumer caught up."""
        config = {
            "url": dev.api_url,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **FAST,
        }
        try:
            with Consumer(config) as consumer:
                consumer.subscribe([topic])
                taken = commits = 0
                while taken < 40:
                    batch = consumer.consume(2, timeout=1.0)
                    if batch:
                        taken += len(batch)
                        watching.wait(30)
                        consumer.commit(asynchronous=False)
                        commits += 1
                        if commits <= PACED_COMMITS:
                            sampled(console, group, 40 - taken)
                        time.sleep(0.25)
                deadline = time.monotonic() + 60
                while not done.is_set() and time.monotonic() < deadline:
                    consumer.poll(0.2)  # a member (heartbeating) while the page looks
        except Exception as error:  # reported on the test's thread
            failed.append(error)

    reader = threading.Thread(target=catch_up, daemon=True)
    reader.start()
    try:
        page.goto(f"{console}?refresh_ms={REFRESH_MS}#/groups/{group}")
        status = page.get_by_role("status")
        status.filter(has_text="Stable, generation").wait_for(timeout=20_000)
        watching.set()
        members = page.get_by_role("table", name=f"Members of {group}")
        assert f"{topic}: 0, 1" in members.inner_text()
        # Caught up means both partitions committed to their end: the status line's "total lag
        # 0" alone is also what a group that has committed nothing yet shows.
        offsets = page.get_by_role("table", name=f"Committed offsets of {group}")
        expect(offsets.locator("tbody tr td:nth-child(3)")).to_have_text(
            ["20", "20"], timeout=30_000
        )
        expect(offsets.locator("tbody tr td:nth-child(5)")).to_have_text(["0", "0"])
        expect(status).to_contain_text("total lag 0 records")
        chart = page.locator("figure")
        chart.locator("canvas").wait_for()  # drawn by the vendored uPlot
        assert axe_violations(page) == []
        # The console's samples, from the first commit on: the lag only fell, to 0.
        lags = sampled_until_caught_up(console, group)
        assert lags[0] > 0
        assert lags[-1] == 0
        assert lags == sorted(lags, reverse=True)
        assert len(set(lags)) >= 3, f"too few samples to see it fall: {lags}"
        assert int(chart.get_attribute("data-samples")) >= 3
    finally:
        watching.set()
        done.set()
        reader.join(timeout=30)
    assert not failed, failed


def test_the_groups_screen_lists_each_group_with_its_lag(dev, console, page):
    mark = uuid.uuid4().hex[:6]
    topic, group = f"listed-{mark}", f"listed-{mark}"
    api(dev, "POST", "/v1/topics", {"name": topic, "partitions": 2})
    for partition in (0, 1):
        records = [{"value": f"r{i}", "partition": partition} for i in range(5)]
        api(dev, "POST", f"/v1/topics/{topic}/records", {"records": records})
    member, generation = stable_member(dev, group, topic)
    commit(dev, group, member, generation, topic, [1, 2])  # 4 + 3 records behind

    page.goto(f"{console}#/groups")
    row = page.locator("tbody tr", has=page.get_by_role("link", name=group))
    row.wait_for()
    assert row.locator("td").all_inner_texts()[1:] == ["Stable", "1", "7"]
    assert axe_violations(page) == []


def test_a_group_nobody_joined_says_so(console, page):
    page.goto(f"{console}#/groups/no-such-group-{uuid.uuid4().hex[:6]}")
    page.get_by_role("status").filter(has_text="No such group").wait_for()
    assert page.locator("figure").is_hidden()


def test_an_empty_groups_offsets_can_be_reset(dev, console, page):
    mark = uuid.uuid4().hex[:6]
    topic, group = f"replay-{mark}", f"replayers-{mark}"
    api(dev, "POST", "/v1/topics", {"name": topic, "partitions": 2})
    for partition in (0, 1):
        records = [{"value": f"r{i}", "partition": partition} for i in range(3)]
        api(dev, "POST", f"/v1/topics/{topic}/records", {"records": records})
    member, generation = stable_member(dev, group, topic)
    commit(dev, group, member, generation, topic, [3, 3])

    page.goto(f"{console}?refresh_ms={REFRESH_MS}#/groups/{group}")
    page.get_by_role("status").filter(has_text="total lag 0 records").wait_for()
    form = page.get_by_role("form", name="Reset the group's offsets")
    assert form.is_hidden()  # a member is in it: Kafka resets only an empty group's offsets

    api(dev, "DELETE", f"/v1/groups/{group}/members/{member}")
    form.wait_for()
    page.get_by_label("Move them to").select_option("earliest")
    form.get_by_role("button", name="Reset").click()
    page.get_by_role("status").filter(has_text="total lag 6 records").wait_for(timeout=10_000)
    assert axe_violations(page) == []
