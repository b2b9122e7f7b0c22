"""The conformance suite's comparison itself (tests/support/differential.py): a difference is
found wherever it is, named by a path a reader can follow, and only a row of docs/kafka.md
that matches it exactly lets it pass."""

from __future__ import annotations

import pytest
from tests.support.differential import (
    Allowed,
    Difference,
    allowed,
    batches,
    differences,
    normalised,
)

from tidelog.records.builder import RecordBatchBuilder


def test_entries_are_compared_by_their_names_not_their_order():
    kafka = {"topics": [{"name": "a", "error_code": "NONE"}, {"name": "b", "error_code": "NONE"}]}
    tidelog = {"topics": [{"name": "b", "error_code": "NONE"}, {"name": "a", "error_code": "X"}]}
    assert list(differences(kafka, tidelog)) == [
        Difference("topics[a]/error_code", '"NONE"', '"X"')
    ]


def test_an_entry_or_field_only_one_side_has_is_absent_on_the_other():
    found = list(differences({"apis": {"1": "0-2", "9": "1-3"}}, {"apis": {"1": "0-2"}}))
    assert found == [Difference("apis/9", '"1-3"', "absent")]
    assert list(differences({"x": None}, {"x": []})) == [Difference("x", "null", "[]")]


def test_a_clusters_own_ids_compare_by_the_order_they_are_first_seen():
    answer = {
        "a": {"node_id": 7, "leader_id": 7},
        "b": {"topic_id": "u1"},
        "c": {"name": "conf-t-x"},
    }
    assert normalised(answer, "t") == {
        "a": {"node_id": "<node1>", "leader_id": "<node1>"},
        "b": {"topic_id": "<topic-id1>"},
        "c": {"name": "x"},
    }
    other = {
        "a": {"node_id": 3, "leader_id": 4},
        "b": {"topic_id": "u2"},
        "c": {"name": "conf-t-x"},
    }
    assert [d.path for d in differences(normalised(answer, "t"), normalised(other, "t"))] == [
        "a/leader_id"
    ]


def test_fetched_batches_compare_field_by_field():
    def batch(epoch: int) -> bytes:
        builder = RecordBatchBuilder(partition_leader_epoch=epoch)
        builder.append(b"k", b"v", timestamp=5)
        return builder.build()

    found = list(differences({"records": batches(batch(0))}, {"records": batches(batch(-1))}))
    assert [d.path for d in found] == ["records[0]/partition_leader_epoch"]


ROWS = """
## Where tidelog answers otherwise than Kafka

| sequence | where | Kafka | tidelog | why |
| --- | --- | --- | --- | --- |
| `seq` | `topics[a]/error_code` | `"NONE"` | `*` | a reason |
| `*` | `*/configs[flush.ms]` | `*` | `absent` | another |

## Next
| `seq` | `x` | `1` | `2` | not in the table's section |
"""


def test_rows_match_exactly_with_star_for_any_text(tmp_path):
    page = tmp_path / "kafka.md"
    page.write_text(ROWS)
    first, second = allowed(page)
    assert first == Allowed("seq", "topics[a]/error_code", '"NONE"', "*", "a reason")
    assert first.matches("seq", Difference("topics[a]/error_code", '"NONE"', '"X"'))
    assert not first.matches("other", Difference("topics[a]/error_code", '"NONE"', '"X"'))
    assert not first.matches("seq", Difference("topics[b]/error_code", '"NONE"', '"X"'))
    assert not first.matches("seq", Difference("topics[a]/error_code", '"X"', '"X"'))
    assert second.matches("any", Difference("create/topics[t]/configs[flush.ms]", "{}", "absent"))
    assert not second.matches("any", Difference("create/topics[t]/configs[flush.ms]", "{}", "{}"))


def test_a_row_without_a_reason_is_refused(tmp_path):
    page = tmp_path / "kafka.md"
    page.write_text(ROWS.replace("a reason", " "))
    with pytest.raises(ValueError, match="without a reason"):
        allowed(page)
