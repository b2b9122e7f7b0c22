"""`tidelog dev`'s Kafka broker settings (tidelog.local.broker): taken under Kafka's names from
--override, Kafka's container-image variables and tidelog's own, in that order of precedence;
anything else is an error at start, never ignored."""

from __future__ import annotations

import pytest

from tidelog.kafka.listeners import Listener
from tidelog.local.broker import (
    BrokerSettingError,
    Given,
    banner,
    container_variable,
    environment,
    gather,
    kafka_port,
)


def test_a_flag_wins_over_kafkas_variable_which_wins_over_tidelogs():
    environ = {"TIDELOG_NUM_PARTITIONS": "2", "KAFKA_NUM_PARTITIONS": "3"}
    assert gather([], {"TIDELOG_NUM_PARTITIONS": "2"})["num.partitions"].value == "2"
    assert gather([], environ)["num.partitions"] == Given("3", "KAFKA_NUM_PARTITIONS")
    assert gather(["num.partitions=4"], environ)["num.partitions"] == Given("4", "--override")
    assert container_variable("auto.create.topics.enable") == "KAFKA_AUTO_CREATE_TOPICS_ENABLE"


def test_cluster_settings_become_the_functions_and_agents_settings():
    given = gather(
        [
            "num.partitions=6",
            "auto.create.topics.enable=FALSE",
            "group.min.session.timeout.ms=250",
            "default.replication.factor=3",
        ],
        {},
    )
    assert environment(given) == {
        "TIDELOG_NUM_PARTITIONS": "6",
        "TIDELOG_AUTO_CREATE_TOPICS": "false",
        "TIDELOG_GROUP_MIN_SESSION_TIMEOUT_MS": "250",
    }
    shown = banner(given)
    assert "default.replication.factor=3   (--override; accepted: S3 keeps" in shown
    assert "num.partitions=6   (--override)" in shown


@pytest.mark.parametrize(
    ("override", "says"),
    [
        ("num.partitions=0", "num.partitions='0' (--override): a whole number, 1 or more"),
        ("num.partitions", "give name=value"),
        ("log.retention.hours=1", "tidelog dev takes"),
        ("auto.create.topics.enable=yes", "true or false"),
        ("group.max.session.timeout.ms=-5", "milliseconds"),
        ("default.replication.factor=0", "a whole number"),
    ],
)
def test_a_setting_tidelog_does_not_take_or_a_bad_value_is_refused(override, says):
    with pytest.raises(BrokerSettingError, match=says.replace("(", r"\(").replace(")", r"\)")):
        gather([override], {})


def test_a_bad_value_from_the_environment_names_its_variable():
    with pytest.raises(BrokerSettingError, match="KAFKA_NUM_PARTITIONS"):
        gather([], {"KAFKA_NUM_PARTITIONS": "many"})


def test_the_kafka_port_takes_listeners_sasl_and_the_authorizer():
    port = kafka_port({})
    assert (port.listeners, port.authorizer) == (None, None)
    given = gather(
        [
            "listeners=PLAINTEXT://:0,SASL_PLAINTEXT://:0",
            "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users=User:admin;User:ops",
            "allow.everyone.if.no.acl.found=true",
        ],
        {},
    )
    port = kafka_port(given)
    assert port.listeners == (Listener("PLAINTEXT", "", 0), Listener("SASL_PLAINTEXT", "", 0))
    assert port.sasl_mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert port.authorizer is not None
    assert port.authorizer.super_users == frozenset({"User:admin", "User:ops"})
    assert port.authorizer.allow_everyone_if_no_acl_found


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (["listeners=HTTP://:80"], "the name is one of"),
        (["sasl.enabled.mechanisms=GSSAPI"], "GSSAPI"),
        (["super.users=admin"], "not a principal"),
        (["super.users=User:admin"], "need authorizer.class.name"),
    ],
)
def test_a_kafka_port_setting_that_cannot_work_is_refused(overrides, says):
    with pytest.raises(BrokerSettingError, match=says):
        kafka_port(gather(overrides, {}))
