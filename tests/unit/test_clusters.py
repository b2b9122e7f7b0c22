"""One default names the log everywhere: TIDELOG_CLUSTER, else the dev stack (tidelog.clusters)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from tidelog import clusters
from tidelog.spark.options import Connection, OptionError


class FakeCloudFormation:
    def __init__(self, stacks):
        self.stacks = stacks
        self.asked = []

    def describe_stacks(self, StackName):
        self.asked.append(StackName)
        if StackName not in self.stacks:
            error = {
                "Code": "ValidationError",
                "Message": f"Stack with id {StackName} does not exist",
            }
            raise ClientError({"Error": error}, "DescribeStacks")
        outputs = [{"OutputKey": k, "OutputValue": v} for k, v in self.stacks[StackName].items()]
        return {"Stacks": [{"StackName": StackName, "Outputs": outputs}]}


DEPLOYED = {
    "prod": {
        "DataBucketName": "prod-databucket-1x2y",
        "MetadataTableName": "prod-Meta-9z",
        "AssignmentStateMachineArn": "arn:aws:states:eu-west-1:111122223333:stateMachine:prod-A",
    }
}


def test_the_name_comes_from_the_caller_then_the_environment_then_the_dev_stack():
    assert clusters.cluster_name("given", {"TIDELOG_CLUSTER": "env"}) == "given"
    assert clusters.cluster_name(None, {"TIDELOG_CLUSTER": "env"}) == "env"
    assert clusters.cluster_name(None, {}) == "tidelog"


def test_a_deployed_stack_is_found_by_its_outputs():
    cfn = FakeCloudFormation(DEPLOYED)
    found = clusters.locate("prod", endpoint=None, cloudformation=lambda: cfn)
    assert found == clusters.Location(
        "prod-databucket-1x2y",
        "prod-Meta-9z",
        "arn:aws:states:eu-west-1:111122223333:stateMachine:prod-A",
    )
    assert cfn.asked == ["prod"]


def test_against_an_endpoint_without_the_stack_the_dev_names_serve():
    cfn = FakeCloudFormation({})
    found = clusters.locate("tidelog", endpoint="http://127.0.0.1:4566", cloudformation=lambda: cfn)
    assert (found.bucket, found.table) == ("tidelog-databucket", "tidelog-MetadataTable")
    machine = clusters.dev_location("tidelog", {"AWS_REGION": "eu-west-1"}).state_machine
    assert (
        machine
        == "arn:aws:states:eu-west-1:123456789012:stateMachine:tidelog-AssignmentStateMachine"
    )


def test_against_aws_a_missing_stack_says_how_to_name_one():
    with pytest.raises(clusters.ClusterNotFoundError, match="TIDELOG_CLUSTER"):
        clusters.locate("nope", endpoint=None, cloudformation=lambda: FakeCloudFormation({}))
    with pytest.raises(clusters.ClusterNotFoundError, match="outputs"):
        clusters.locate(
            "odd", endpoint=None, cloudformation=lambda: FakeCloudFormation({"odd": {}})
        )


def test_spark_options_find_the_cluster_only_when_bucket_or_table_is_missing():
    asked = []

    def locate(cluster, region, endpoint):
        asked.append((cluster, region, endpoint))
        return clusters.Location("found-bucket", "found-table")

    env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "AWS_REGION": "eu-west-1"}
    default = Connection.from_options({}, env, locate)
    assert (default.bucket, default.table, default.endpoint) == (
        "found-bucket",
        "found-table",
        "http://127.0.0.1:4566",
    )
    named = Connection.from_options({}, {**env, "TIDELOG_CLUSTER": "staging"}, locate)
    assert named.bucket == "found-bucket"
    explicit = Connection.from_options({"bucket": "b", "table": "t"}, env, locate)
    assert (explicit.bucket, explicit.table) == ("b", "t")
    assert asked == [
        ("tidelog", "eu-west-1", "http://127.0.0.1:4566"),
        ("staging", "eu-west-1", "http://127.0.0.1:4566"),
    ]

    def missing(cluster, region, endpoint):
        raise clusters.ClusterNotFoundError(f"no tidelog stack named {cluster!r}")

    with pytest.raises(OptionError, match="no tidelog stack named 'tidelog'"):
        Connection.from_options({}, {}, missing)


def test_the_dev_stack_is_found_with_nothing_but_its_endpoint(dev):
    found = Connection.from_options({}, {"AWS_ENDPOINT_URL": dev.aws_url})
    assert (found.bucket, found.table) == ("tidelog-databucket", "tidelog-MetadataTable")
