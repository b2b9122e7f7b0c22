"""The topics screen: every topic with its partitions, records, bytes, retention, cleanup policy
and the groups reading it with their lag; filtered, sorted, by keyboard too, and accessible."""

from __future__ import annotations

import uuid

from tests.browser.conftest import api, axe_violations, photograph


def test_topics_are_listed_filtered_and_sorted(dev, console, page):
    mark = uuid.uuid4().hex[:6]
    small, big, readers = f"small-{mark}", f"big-{mark}", f"readers-{mark}"
    api(dev, "POST", "/v1/topics", {"name": small, "partitions": 1})
    api(
        dev,
        "POST",
        "/v1/topics",
        {"name": big, "partitions": 3, "configs": {"cleanup.policy": "compact"}},
    )
    records = [{"key": f"k{i}", "value": "v"} for i in range(7)]
    api(dev, "POST", f"/v1/topics/{big}/records", {"records": records})
    # A group made by a reset (Kafka's kafka-consumer-groups --reset-offsets): 7 records behind.
    api(dev, "POST", f"/v1/groups/{readers}/offsets/reset", {"to": "earliest", "topics": [big]})
    stored = sum(
        p["size_bytes"] for p in api(dev, "GET", f"/v1/topics/{big}?sizes=true")["partitions"]
    )
    assert 0 < stored < 1024

    page.goto(console)
    page.get_by_label("Filter").fill(mark)
    rows = page.locator("tbody tr")
    rows.first.wait_for()
    assert rows.count() == 2
    assert page.get_by_role("status").inner_text().startswith("2 of ")
    assert rows.nth(0).locator("td").all_inner_texts() == [
        big,
        "3",
        "7",
        f"{stored} B",
        "7 d",
        "compact",
        f"{readers} (7)",
    ]
    assert rows.nth(1).locator("td").all_inner_texts() == [
        small,
        "1",
        "0",
        "0 B",
        "7 d",
        "delete",
        "none",
    ]

    # Sorting by keyboard: Tab reaches the column's button, Enter sorts, again reverses.
    page.get_by_role("button", name="Bytes").focus()
    page.keyboard.press("Enter")
    header = page.locator("th", has=page.get_by_role("button", name="Bytes"))
    assert header.get_attribute("aria-sort") == "ascending"
    assert rows.nth(0).locator("td").first.inner_text() == small
    page.keyboard.press("Enter")
    assert header.get_attribute("aria-sort") == "descending"
    assert rows.nth(0).locator("td").first.inner_text() == big
    assert axe_violations(page) == []
    photograph(page, "topics-table")

    rows.nth(0).get_by_role("link", name=readers).click()
    page.get_by_role("status").filter(has_text="total lag 7 records").wait_for()
    assert page.get_by_role("status").inner_text().startswith("Empty, generation 0")


def test_an_empty_filter_result_says_so(console, page):
    page.goto(console)
    absent = f"nothing-{uuid.uuid4().hex}"
    page.get_by_label("Filter").fill(absent)
    assert (
        page.get_by_role("status").inner_text().startswith(f'No topic\'s name contains "{absent}"')
    )
