"""The topics screen: every topic with its partitions, records, retention and cleanup policy;
filtered, sorted, by keyboard too, and accessible."""

from __future__ import annotations

import uuid

from tests.browser.conftest import api, axe_violations


def test_topics_are_listed_filtered_and_sorted(dev, page):
    mark = uuid.uuid4().hex[:6]
    small, big = f"small-{mark}", f"big-{mark}"
    api(dev, "POST", "/v1/topics", {"name": small, "partitions": 1})
    api(
        dev,
        "POST",
        "/v1/topics",
        {"name": big, "partitions": 3, "configs": {"cleanup.policy": "compact"}},
    )
    records = [{"key": f"k{i}", "value": "v"} for i in range(7)]
    api(dev, "POST", f"/v1/topics/{big}/records", {"records": records})

    page.goto(dev.api_url + "/console/")
    page.get_by_label("Filter").fill(mark)
    rows = page.locator("tbody tr")
    rows.first.wait_for()
    assert rows.count() == 2
    assert page.get_by_role("status").inner_text().startswith("2 of ")
    assert rows.nth(0).locator("td").all_inner_texts() == [big, "3", "7", "7 d", "compact"]
    assert rows.nth(1).locator("td").all_inner_texts() == [small, "1", "0", "7 d", "delete"]

    # Sorting by keyboard: Tab reaches the column's button, Enter sorts, again reverses.
    page.get_by_role("button", name="Records").focus()
    page.keyboard.press("Enter")
    header = page.locator("th", has=page.get_by_role("button", name="Records"))
    assert header.get_attribute("aria-sort") == "ascending"
    assert rows.nth(0).locator("td").first.inner_text() == small
    page.keyboard.press("Enter")
    assert header.get_attribute("aria-sort") == "descending"
    assert rows.nth(0).locator("td").first.inner_text() == big

    assert axe_violations(page) == []


def test_an_empty_filter_result_says_so(dev, page):
    page.goto(dev.api_url + "/console/")
    page.get_by_label("Filter").fill(f"nothing-{uuid.uuid4().hex}")
    assert page.get_by_role("status").inner_text().startswith("0 of ")
