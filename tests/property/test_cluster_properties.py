"""Every cluster id is one Kafka would accept."""

from __future__ import annotations

import base64
import re
import uuid

from hypothesis import given
from hypothesis import strategies as st

from tidelog.cluster import new_cluster_id


@given(st.lists(st.binary(min_size=16, max_size=16), min_size=8, max_size=8))
def test_ids_are_22_url_safe_characters_of_a_v4_uuid(draws):
    pending = list(draws)
    cluster_id = new_cluster_id(lambda n: pending.pop(0) if pending else bytes(range(16)))
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", cluster_id)
    decoded = uuid.UUID(bytes=base64.urlsafe_b64decode(cluster_id + "=="))
    assert decoded.version == 4
    assert decoded.variant == uuid.RFC_4122
