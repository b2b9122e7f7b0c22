"""SASL/OAUTHBEARER's client message (RFC 7628), read as Kafka's OAuthBearerSaslServer reads
it: as kafka-python and librdkafka send it, with and without extensions and an authorization
id, and refused when it is anything else."""

from __future__ import annotations

import pytest

from tidelog.kafka.oauthbearer import bearer_token
from tidelog.kafka.scram import LoginError

TOKEN = "tidelog-aws-v1.aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8_QWN0aW9u"


@pytest.mark.parametrize(
    "message",
    [
        f"n,,\x01auth=Bearer {TOKEN}\x01\x01",  # kafka-python, librdkafka
        f"n,,\x01auth=Bearer {TOKEN}\x01traceId=123\x01logicalCluster=lc\x01\x01",  # extensions
        f"n,a=User:alice,\x01auth=Bearer {TOKEN}\x01\x01",  # an authorization id
        f"y,,\x01auth=Bearer  {TOKEN}\x01\x01",
    ],
)
def test_the_token_is_read_from_each_form_clients_send(message):
    assert bearer_token(message.encode()) == TOKEN


@pytest.mark.parametrize(
    "message",
    [
        f"auth=Bearer {TOKEN}\x01\x01",  # no GS2 header
        f"x,,\x01auth=Bearer {TOKEN}\x01\x01",
        f"n,,\x01auth=Bearer {TOKEN}\x01",  # one ^A at the end
        f"n,,\x01auth=Basic {TOKEN}\x01\x01",
        f"n,,\x01auth=Bearer {TOKEN}\x01auth=Bearer x\x01\x01",  # twice
        "n,,\x01traceId=1\x01\x01",  # no auth
        f"n,,\x01auth=Bearer {TOKEN} junk\x01\x01",
        f"n,,\x01b@d=1\x01auth=Bearer {TOKEN}\x01\x01",
        "n,,\x01\x01",
    ],
)
def test_anything_else_is_refused(message):
    with pytest.raises(LoginError):
        bearer_token(message.encode())


def test_a_message_that_is_not_utf8_is_refused():
    with pytest.raises(LoginError, match="UTF-8"):
        bearer_token(b"n,,\x01auth=Bearer \xff\x01\x01")
