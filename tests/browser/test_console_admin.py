"""Topic administration from the console: create, add partitions, change a config, and delete
behind a typed confirmation; refusals show Kafka's error name."""

from __future__ import annotations

import uuid

from tests.browser.conftest import api, axe_violations


def test_create_grow_configure_and_delete_a_topic(dev, page):
    name = f"admin-{uuid.uuid4().hex[:6]}"
    page.goto(f"{dev.api_url}/console/#/topics")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Partitions", exact=True).fill("2")
    page.get_by_label("Cleanup policy").select_option("compact")
    page.get_by_role("button", name="Create").click()
    page.get_by_role("heading", name=name).wait_for()
    described = api(dev, "GET", f"/v1/topics/{name}")
    assert len(described["partitions"]) == 2

    page.get_by_label("Partitions in all").fill("5")
    page.get_by_role("button", name="Add partitions").click()
    page.get_by_label("Partition", exact=True).locator("option", has_text="4").wait_for(
        state="attached"
    )
    assert len(api(dev, "GET", f"/v1/topics/{name}")["partitions"]) == 5

    page.get_by_label("Config", exact=True).fill("retention.ms")
    page.get_by_label("New value").fill("3600000")
    page.get_by_role("button", name="Change").click()
    page.get_by_text("retention.ms is now 3600000").wait_for()
    listed = {t["name"]: t for t in api(dev, "GET", "/v1/topics")["topics"]}
    assert listed[name]["configs"]["retention.ms"] == "3600000"

    page.get_by_label("Config", exact=True).fill("no.such.config")
    page.get_by_role("button", name="Change").click()
    page.get_by_role("alert").filter(has_text="INVALID_CONFIG").wait_for()
    assert axe_violations(page) == []

    delete = page.get_by_role("button", name="Delete the topic")
    assert delete.is_disabled()
    page.get_by_label(f"Type {name} to delete it").fill(name[:-1])
    assert delete.is_disabled()
    page.get_by_label(f"Type {name} to delete it").fill(name)
    delete.click()
    page.get_by_role("heading", name="Topics").wait_for()
    assert name not in {t["name"] for t in api(dev, "GET", "/v1/topics")["topics"]}


def test_a_refused_creation_shows_kafkas_error(dev, page):
    name = f"twice-{uuid.uuid4().hex[:6]}"
    api(dev, "POST", "/v1/topics", {"name": name})
    page.goto(f"{dev.api_url}/console/#/topics")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_role("button", name="Create").click()
    page.get_by_role("alert").filter(has_text="TOPIC_ALREADY_EXISTS").wait_for()
