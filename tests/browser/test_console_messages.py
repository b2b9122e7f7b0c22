"""The messages screen: records from the newest N, an offset or a time, one partition or all; a
key search that reads only the key's partition (murmur2, as Kafka's producers place keys), value
and header searches; text, JSON, hex or base64; pages; a command to copy; a live tail."""

from __future__ import annotations

import base64
import json
import uuid

import pytest
from tests.browser.conftest import api, axe_violations

from tidelog.partitioner import partition_for_key

T0 = 1_795_000_000_000  # 2026-11-18T11:06:40Z
RECORDS = "table[aria-label^='Records of']"  # the screen's other table holds the partitions


@pytest.fixture
def topic(dev):
    name = f"messages-{uuid.uuid4().hex[:6]}"
    api(dev, "POST", "/v1/topics", {"name": name, "partitions": 3})
    records = [
        {"key": f"user-{i}", "value": f"click {i}", "timestamp": T0 + i * 60_000} for i in range(9)
    ]
    records.append(
        {
            "key": "doc",
            "value": json.dumps({"b": [1, 2], "a": "x"}),
            "headers": [{"key": "source", "value": "web"}],
            "timestamp": T0 + 9 * 60_000,
        }
    )
    api(dev, "POST", f"/v1/topics/{name}/records", {"records": records})
    binary = base64.b64encode(b"\x00\xff\x10").decode()
    api(
        dev,
        "POST",
        f"/v1/topics/{name}/records",
        {
            "records": [{"key": "Ymlu", "value": binary, "partition": 0, "timestamp": T0}],
            "encoding": "base64",
        },
    )
    return name


def cells(page, column):
    return page.locator(f"{RECORDS} tbody tr td:nth-child({column})").all_inner_texts()


def test_the_newest_records_of_every_partition_then_one_key(console, page, topic):
    page.goto(f"{console}#/topics/{topic}")
    page.get_by_role("status").filter(has_text="records from").wait_for()
    assert len(cells(page, 2)) == 11
    # The key's partition is Kafka's: the page's murmur2 agrees with the producer's.
    for key in ("user-1", "doc", "", "ééé", "a-much-longer-key-of-many-blocks"):
        placed = page.evaluate(
            "async (key) => (await import('./murmur2.js')).partitionForKey(key, 3)", key
        )
        assert placed == partition_for_key(key.encode(), 3), key
    page.get_by_label("Key").fill("user-4")
    page.get_by_role("button", name="Read").click()
    expected = partition_for_key(b"user-4", 3)
    page.get_by_role("status").filter(has_text=f"partition {expected} (the key's)").wait_for()
    assert cells(page, 4) == ["user-4"]
    assert cells(page, 5) == ["click 4"]
    assert axe_violations(page) == []


def test_json_hex_base64_offsets_and_times(console, page, topic):
    page.goto(f"{console}#/topics/{topic}")
    page.get_by_role("status").filter(has_text="records from").wait_for()
    page.get_by_label("Key").fill("doc")
    page.get_by_role("button", name="Read").click()
    page.get_by_role("status").filter(has_text="the key's").wait_for()
    page.get_by_label("Show as").select_option("json")
    assert json.loads(page.locator(f"{RECORDS} tbody td pre").inner_text()) == {
        "b": [1, 2],
        "a": "x",
    }
    assert "\n" in page.locator(f"{RECORDS} tbody td pre").inner_text()  # pretty, not one line
    assert cells(page, 6) == ["source=web"]

    page.get_by_label("Key").fill("")
    page.get_by_label("Partition", exact=True).select_option("0")
    page.get_by_label("Start from").select_option("offset")
    page.get_by_label("Value", exact=True).fill("0")
    page.get_by_label("Show as").select_option("hex")
    page.get_by_role("button", name="Read").click()
    page.get_by_role("status").filter(has_text="1 partition").wait_for()
    assert set(cells(page, 1)) == {"0"}
    assert "00 ff 10" in cells(page, 5)  # the binary value, as hex
    page.get_by_label("Show as").select_option("base64")
    assert "AP8Q" in cells(page, 5)  # and as base64, as the API carries it
    assert "Ymlu" in cells(page, 4)

    page.get_by_label("Partition", exact=True).select_option("all")
    page.get_by_label("Start from").select_option("time")
    page.get_by_label("Value", exact=True).fill("2026-11-18T11:13:40Z")  # T0 + 7 minutes
    page.get_by_label("Show as").select_option("text")
    page.get_by_role("button", name="Read").click()
    page.get_by_role("status").filter(has_text="3 partition").wait_for()
    # From the first offset at or after the time, as Kafka's offsetsForTimes: what was written
    # later comes too, stamped earlier or not (the binary record, stamped T0, was written last).
    assert sorted(cells(page, 4)) == ["bin", "doc", "user-7", "user-8"]


def test_copy_a_record_as_a_command_and_follow_new_ones(dev, console, browser, topic):
    context = browser.new_context(bypass_csp=True)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    try:
        page.goto(f"{console}#/topics/{topic}")
        page.get_by_role("status").filter(has_text="records from").wait_for()
        first = page.locator(f"{RECORDS} tbody tr").first
        partition, offset = (
            first.locator("td").nth(0).inner_text(),
            first.locator("td").nth(1).inner_text(),
        )
        first.get_by_role("button", name="Copy the command").click()
        assert page.evaluate("navigator.clipboard.readText()") == (
            f"tidelog consume {topic} -p {partition} -o {offset} -n 1 -f json"
        )

        page.get_by_label("Follow new records").check()
        page.get_by_role("status").filter(has_text="records from").wait_for()
        api(dev, "POST", f"/v1/topics/{topic}/records", {"records": [{"value": "fresh"}]})
        page.locator(f"{RECORDS} tbody td", has_text="fresh").wait_for(timeout=15_000)
        page.get_by_label("Follow new records").uncheck()
    finally:
        context.close()


def test_value_and_header_searches(console, page, topic):
    page.goto(f"{console}#/topics/{topic}")
    page.get_by_role("status").filter(has_text="records from").wait_for()
    page.get_by_label("Value contains").fill("click 3")
    page.get_by_role("button", name="Read").click()
    page.get_by_role("status").filter(has_text="1 records from 3 partition(s)").wait_for()
    assert cells(page, 4) == ["user-3"]
    assert "read to find them" in page.get_by_role("status").inner_text()

    page.get_by_label("Value contains").fill("")
    page.get_by_label("Header contains").fill("source=we")
    page.get_by_role("button", name="Read").click()
    page.get_by_role("status").filter(has_text="1 records from").wait_for()
    assert cells(page, 4) == ["doc"]

    page.get_by_label("Header contains").fill("source=app")
    page.get_by_role("button", name="Read").click()
    page.get_by_role("status").filter(has_text="No records there").wait_for()
    assert cells(page, 4) == []
    assert axe_violations(page) == []


def test_a_bad_start_is_told_with_kafkas_name_and_what_to_do(console, page, topic):
    page.goto(f"{console}#/topics/{topic}")
    page.get_by_role("status").filter(has_text="records from").wait_for()
    for how, value, error in (
        ("newest", "100000", "INVALID_REQUEST: N is a whole number from 1 to 500"),
        ("offset", "-3", "INVALID_REQUEST: an offset is a whole number"),
        ("time", "yesterday-ish", 'INVALID_TIMESTAMP: "yesterday-ish" is not a time'),
    ):
        page.get_by_label("Start from").select_option(how)
        page.get_by_label("Value", exact=True).fill(value)
        page.get_by_role("button", name="Read").click()
        alert = page.get_by_role("alert")
        alert.filter(has_text=error).wait_for()
    assert "Give a time such as" in alert.inner_text()  # what to do, not only what went wrong


def test_a_large_partition_is_read_page_by_page_skipping_nothing(dev, console, page):
    name = f"paged-{uuid.uuid4().hex[:6]}"
    api(dev, "POST", "/v1/topics", {"name": name, "partitions": 2})
    records = [{"value": f"r{i}", "partition": i % 2, "timestamp": T0 + i} for i in range(1_200)]
    api(dev, "POST", f"/v1/topics/{name}/records", {"records": records})

    page.goto(f"{console}#/topics/{name}")
    page.get_by_role("status").filter(has_text="records from").wait_for()
    page.get_by_label("Start from").select_option("offset")
    page.get_by_label("Value", exact=True).fill("0")
    page.get_by_role("button", name="Read").click()
    seen = []
    for expected in (500, 500, 200):
        status = page.get_by_role("status").filter(has_text=f"{expected} records from")
        status.wait_for()
        assert (
            page.locator(f"{RECORDS} tbody tr").count() == expected
        )  # never more than a page drawn
        seen += cells(page, 5)
        if expected == 500:
            assert "Next page" in status.inner_text()
            page.get_by_role("button", name="Next page").click()
    assert page.get_by_role("button", name="Next page").is_hidden()
    assert seen == [f"r{i}" for i in range(1_200)]  # in time order, none skipped or repeated


def test_each_partitions_last_stable_offset_and_open_transactions(console, page, dev):
    from confluent_kafka import Producer

    name = f"txn-{uuid.uuid4().hex[:6]}"
    api(dev, "POST", "/v1/topics", {"name": name, "partitions": 2})
    api(dev, "POST", f"/v1/topics/{name}/records", {"records": [{"value": "a", "partition": 1}]})
    producer = Producer({"bootstrap.servers": dev.bootstrap, "transactional.id": name})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(name, value=b"pending", partition=1)
    producer.flush(30)
    api(dev, "POST", f"/v1/topics/{name}/records", {"records": [{"value": "b", "partition": 1}]})
    page.goto(f"{console}#/topics/{name}")
    table = page.get_by_role("table", name=f"Partitions of {name}")
    rows = table.locator("tbody tr")
    rows.first.wait_for()
    assert rows.nth(1).locator("td").all_inner_texts() == ["1", "0", "1", "3", "1"]
    page.get_by_role("status").filter(has_text="records from").wait_for()
    assert cells(page, 5) == ["a"]  # read_committed: the open transaction holds "b" back
    producer.abort_transaction(30)
    assert axe_violations(page) == []
