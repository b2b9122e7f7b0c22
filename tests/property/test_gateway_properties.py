"""Properties of the local gateway: bodies survive the trip, routing picks the right resource."""

from __future__ import annotations

import base64
import json
import re

from hypothesis import given
from hypothesis import strategies as st
from werkzeug.test import Client

from tidelog.local.gateway import Gateway, Router
from tidelog.local.template import Route


class Echo:
    def __init__(self):
        self.events = []

    def invoke(self, event):
        self.events.append(event)
        return {
            "statusCode": 200,
            "body": event["body"] or "",
            "isBase64Encoded": event["isBase64Encoded"],
        }


BINARY = "application/vnd.kafka.record-batch"


def client():
    echo = Echo()
    app = Gateway(
        [Route("POST", "/v1/x", "F")], {"F": echo}, binary_media_types=[BINARY], stage="live"
    )
    return Client(app), echo


@given(st.binary(max_size=4096))
def test_binary_bodies_arrive_and_return_byte_for_byte(payload):
    http, echo = client()
    response = http.post("/v1/x", data=payload, content_type=BINARY, headers={"Accept": BINARY})
    event = echo.events[-1]
    if payload:
        assert event["isBase64Encoded"]
        assert base64.b64decode(event["body"]) == payload
    assert response.get_data() == payload


@given(st.text(max_size=2048))
def test_text_bodies_arrive_as_the_same_text(text):
    http, echo = client()
    http.post("/v1/x", data=text.encode(), content_type="application/json; charset=utf-8")
    assert (echo.events[-1]["body"] or "") == text


SEGMENT = st.from_regex(re.compile(r"[a-z0-9][a-z0-9._-]{0,10}"), fullmatch=True)
PART = st.one_of(SEGMENT, SEGMENT.map(lambda s: "{" + s.replace(".", "").replace("-", "") + "p}"))


@given(st.lists(st.lists(PART, min_size=1, max_size=5), min_size=1, max_size=6), st.data())
def test_every_route_matches_its_own_paths_and_literals_win(patterns, data):
    routes = [Route("GET", "/" + "/".join(parts), f"F{i}") for i, parts in enumerate(patterns)]
    router = Router(routes)
    for route in routes:
        parts = [p for p in route.path.split("/") if p]
        values = [data.draw(SEGMENT) if p.startswith("{") else p for p in parts]
        match = router.match("GET", "/" + "/".join(values))
        assert match is not None
        chosen = [p for p in match.route.path.split("/") if p]
        assert len(chosen) == len(values)
        for part, value in zip(chosen, values, strict=True):
            assert part.startswith("{") or part == value
        # never a parameter where the chosen route could have matched a literal instead
        own_literals = sum(not p.startswith("{") for p in parts)
        assert sum(not p.startswith("{") for p in chosen) >= own_literals or any(
            not a.startswith("{") and b.startswith("{") for a, b in zip(chosen, parts, strict=True)
        )
        for name, value in (match.path_parameters or {}).items():
            assert value in values, name


@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True),
        st.lists(
            st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=8),
            min_size=1,
            max_size=3,
        ),
        max_size=4,
    )
)
def test_query_strings_keep_every_value(query):
    http, echo = client()
    http.post("/v1/x", query_string=[(k, v) for k, vs in query.items() for v in vs])
    event = echo.events[-1]
    assert (event["multiValueQueryStringParameters"] or {}) == query
    assert (event["queryStringParameters"] or {}) == {k: vs[-1] for k, vs in query.items()}
    json.dumps(event)  # the event is what Lambda would get: plain JSON
