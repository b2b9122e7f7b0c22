"""The deployed stack is secure by default: checked on the template CloudFormation will run."""

from __future__ import annotations

import json

from cfnlint.api import lint_file

from tidelog.local.paths import template_path


def test_cfn_lint_is_clean():
    assert [str(match) for match in lint_file(template_path())] == []


def test_every_route_requires_iam_auth(resources, template):
    (api,) = resources("AWS::ApiGateway::RestApi").values()
    body = api["Properties"]["Body"]
    assert body["securityDefinitions"]["AWS_IAM"]["x-amazon-apigateway-authtype"] == "awsSigv4"
    operations = [
        (path, method, op)
        for path, methods in body["paths"].items()
        for method, op in methods.items()
    ]
    assert {(p, m.upper()) for p, m, _ in operations} == {
        (r.path, r.method) for r in template.routes()
    }
    for path, method, operation in operations:
        assert operation["security"] == [{"AWS_IAM": []}], (path, method)


def test_only_the_api_may_invoke_the_functions(resources):
    permissions = resources("AWS::Lambda::Permission")
    assert permissions
    for name, permission in permissions.items():
        properties = permission["Properties"]
        assert properties["Principal"] == "apigateway.amazonaws.com", name
        assert "SourceArn" in properties, name


def test_the_api_is_regional_and_traced(resources):
    (stage,) = resources("AWS::ApiGateway::Stage").values()
    assert stage["Properties"]["TracingEnabled"] is True
    (api,) = resources("AWS::ApiGateway::RestApi").values()
    assert api["Properties"]["EndpointConfiguration"]["Types"] == ["REGIONAL"]
    assert "application~1vnd.kafka.record-batch" in api["Properties"]["BinaryMediaTypes"]


def test_the_bucket_is_private_encrypted_and_tls_only(resources):
    (bucket,) = resources("AWS::S3::Bucket").values()
    properties = bucket["Properties"]
    assert all(properties["PublicAccessBlockConfiguration"].values())
    assert len(properties["PublicAccessBlockConfiguration"]) == 4
    rule = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in {"AES256", "aws:kms"}
    assert bucket["DeletionPolicy"] == "Retain"
    (policy,) = resources("AWS::S3::BucketPolicy").values()
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for s in statements
    )


def test_the_table_is_encrypted_and_recoverable(resources):
    for name, table in resources("AWS::DynamoDB::Table").items():
        properties = table["Properties"]
        assert properties["SSESpecification"]["SSEEnabled"] is True, name
        assert properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"], name
        assert table["DeletionPolicy"] == "Retain", name


def test_each_function_has_its_own_least_privilege_role(resources):
    functions = resources("AWS::Lambda::Function")
    roles = resources("AWS::IAM::Role")
    used = [f["Properties"]["Role"]["Fn::GetAtt"][0] for f in functions.values()]
    assert len(set(used)) == len(used), "functions share a role"
    for role_name in used:
        for policy in roles[role_name]["Properties"].get("Policies", []):
            for statement in policy["PolicyDocument"]["Statement"]:
                actions = statement["Action"]
                actions = [actions] if isinstance(actions, str) else actions
                assert all("*" not in a for a in actions), (role_name, actions)
                assert statement["Resource"] != "*", (role_name, statement)


def test_the_cluster_function_may_touch_only_the_cluster_item(resources):
    role = resources("AWS::IAM::Role")["ClusterFunctionRole"]
    (policy,) = role["Properties"]["Policies"]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert sorted(statement["Action"]) == ["dynamodb:GetItem", "dynamodb:PutItem"]
    assert statement["Condition"] == {
        "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["cluster"]}
    }


def _statements(resources, role_name):
    role = resources("AWS::IAM::Role")[role_name]
    return [
        s for p in role["Properties"].get("Policies", []) for s in p["PolicyDocument"]["Statement"]
    ]


def test_only_garbage_collection_may_delete_objects(resources):
    deleters = set()
    for name in resources("AWS::IAM::Role"):
        for statement in _statements(resources, name):
            actions = statement["Action"]
            actions = [actions] if isinstance(actions, str) else actions
            if any(a.startswith("s3:Delete") for a in actions):
                deleters.add(name)
                assert actions == ["s3:DeleteObject"]
    assert deleters == {"CollectorFunctionRole"}


def test_housekeeping_runs_on_schedules(template):
    schedules = {f.logical_id: f.schedules for f in template.functions() if f.schedules}
    assert set(schedules) == {
        "MaintenanceFunction",
        "CollectorFunction",
        "TransactionTimeoutsFunction",
    }
    (timeouts,) = schedules["TransactionTimeoutsFunction"]
    assert (timeouts.event, timeouts.interval_s) == ({}, 60)
    (maintain,) = schedules["MaintenanceFunction"]
    assert maintain.event == {"jobs": ["roll", "retention", "compaction"]}
    assert maintain.interval_s == 60
    collect, reconcile = schedules["CollectorFunction"]
    assert (collect.event, collect.interval_s) == ({"jobs": ["gc"]}, 300)
    assert (reconcile.event, reconcile.interval_s) == ({"jobs": ["reconcile"]}, 86400)


def test_the_timeout_sweep_writes_markers_and_deletes_no_object(resources):
    statements = _statements(resources, "TransactionTimeoutsFunctionRole")
    (s3,) = [s for s in statements if str(s["Action"]).startswith("s3:")]
    assert (s3["Action"], s3["Resource"]) == (
        "s3:PutObject",
        {"Fn::Sub": "${DataBucket.Arn}/data/flush/*"},
    )
    (ddb,) = [s for s in statements if s is not s3 and s["Sid"] != "ReadBrokerConfigs"]
    keys = ddb["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
    assert set(keys) == {"txn#*", "offsets#*", "topics", "log#*", "orphans", "due#*"}


def test_functions_read_the_brokers_configs_and_write_none(resources):
    """Every function reads topics, and a topic's defaults with them; only the agents, which
    serve Kafka's config APIs, may change a broker config."""
    for name in resources("AWS::IAM::Role"):
        statements = _statements(resources, name)
        reading = [s for s in statements if "brokerconfigs" in json.dumps(s.get("Condition", {}))]
        topics = any('"topics"' in json.dumps(s.get("Condition", {})) for s in statements)
        if not topics:
            assert not reading, name
            continue
        (statement,) = reading
        assert statement["Sid"] == "ReadBrokerConfigs", name
        assert statement["Action"] == "dynamodb:GetItem", name
        assert statement["Condition"] == {
            "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["brokerconfigs"]}
        }, name


def test_produce_writes_flush_objects_only(resources):
    statements = _statements(resources, "ProduceFunctionRole")
    (s3,) = [s for s in statements if str(s["Action"]).startswith("s3:")]
    assert s3["Action"] == "s3:PutObject"
    assert s3["Resource"] == {"Fn::Sub": "${DataBucket.Arn}/data/flush/*"}
    by_sid = {s["Sid"]: s for s in statements if s is not s3}
    assert set(by_sid) == {
        "CommitOffsets",
        "CoordinateTransactions",
        "ReadGroupsForFencing",
        "ReadBrokerConfigs",
    }

    def keys(sid):
        return by_sid[sid]["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]

    assert set(by_sid["CommitOffsets"]["Action"]) == {
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",  # the heads of a commit's partitions, in one call
        "dynamodb:PutItem",
        "dynamodb:Query",
        "dynamodb:ConditionCheckItem",
    }
    assert keys("CommitOffsets") == [
        "topics",
        "topic-ids",  # auto-created topics' id items
        "log#*",
        "producers",
        "orphans",
        "due#*",
    ]
    # The transaction coordinator deletes only its own items and pending offsets.
    assert "dynamodb:DeleteItem" in by_sid["CoordinateTransactions"]["Action"]
    assert keys("CoordinateTransactions") == ["txn#*", "offsets#*"]
    assert by_sid["ReadGroupsForFencing"]["Action"] == "dynamodb:Query"
    assert keys("ReadGroupsForFencing") == ["group#*"]


def test_errors_and_throttles_raise_alarms(resources):
    alarms = resources("AWS::CloudWatch::Alarm")
    watched = {
        (a["Properties"]["MetricName"], str(a["Properties"]["Dimensions"][0]["Value"]))
        for a in alarms.values()
    }
    assert ("Errors", "{'Ref': 'ProduceFunction'}") in watched
    assert ("Throttles", "{'Ref': 'ProduceFunction'}") in watched
    assert ("Errors", "{'Ref': 'AdminFunction'}") in watched
    assert any(m == "5XXError" for m, _ in watched)


def test_the_assignment_state_machine_may_invoke_only_the_assignor(resources):
    (machine,) = resources("AWS::StepFunctions::StateMachine").values()
    role = machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    statements = _statements(resources, role)
    invoked = [s for s in statements if "lambda:InvokeFunction" in str(s["Action"])]
    assert invoked
    for statement in invoked:
        assert "AssignorFunction" in json.dumps(statement["Resource"]), statement
    groups = _statements(resources, "GroupsFunctionRole")
    (start,) = [s for s in groups if s["Action"] == "states:StartExecution"]
    assert start["Resource"] == {"Ref": "AssignmentStateMachine"}


def test_the_assignor_may_start_the_next_rebalance_of_the_machine_it_names(template):
    """A cooperative group's assignment starts its second round from the assignor. The
    assignor names the machine by its ARN spelled out (the machine refers to the assignor), so
    that ARN must be the machine's."""
    machine = template.resources["AssignmentStateMachine"]["Properties"]
    assert template.resolve(machine["Name"]) == template.physical_name("AssignmentStateMachine")
    assignor = template.resources["AssignorFunction"]["Properties"]
    variables = template.resolve(assignor["Environment"]["Variables"])
    arn = template.arn("AssignmentStateMachine")
    assert variables["TIDELOG_ASSIGNMENT_STATE_MACHINE"] == arn
    statements = template.resolve(assignor["Policies"])[0]["Statement"]
    assert {"states:StartExecution": arn} == {
        s["Action"]: s["Resource"] for s in statements if s["Action"] == "states:StartExecution"
    }


def test_the_state_machine_definition_is_the_asl_file(template):
    (machine,) = template.state_machines()
    definition = json.loads(machine.definition)
    assert definition["States"]["Assign"]["Parameters"]["FunctionName"] == template.arn(
        "AssignorFunction"
    )
    assert definition["States"]["RebalanceDelay"]["SecondsPath"] == "$.delay_seconds"


SNAPSTART = {"ProduceFunction", "FetchFunction", "GroupsFunction"}


def test_request_functions_start_from_snapshots_and_the_api_calls_their_alias(
    resources, cloudformation
):
    parameter = cloudformation["Parameters"]["SnapStart"]
    assert (parameter["Default"], parameter["AllowedValues"]) == (
        "PublishedVersions",
        ["PublishedVersions", "None"],
    )
    functions = resources("AWS::Lambda::Function")
    for name in SNAPSTART:
        properties = functions[name]["Properties"]
        assert properties["SnapStart"] == {"ApplyOn": {"Ref": "SnapStart"}}, name
        # SnapStart refuses more /tmp than 512 MB, and runs Python from 3.12.
        assert properties.get("EphemeralStorage", {"Size": 512})["Size"] <= 512, name
        version = tuple(int(n) for n in properties["Runtime"].removeprefix("python").split("."))
        assert version >= (3, 12), name
    aliases = {
        r["Properties"]["FunctionName"]["Ref"] for r in resources("AWS::Lambda::Alias").values()
    }
    assert aliases == SNAPSTART
    (api,) = resources("AWS::ApiGateway::RestApi").values()
    for path, methods in api["Properties"]["Body"]["paths"].items():
        for method, operation in methods.items():
            uri = operation["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
            target = uri.split("functions/${")[1].split("}")[0]
            function = target.removesuffix("Aliaslive").removesuffix(".Arn")
            assert (function in SNAPSTART) == target.endswith("Aliaslive"), (path, method, target)
    for name, permission in resources("AWS::Lambda::Permission").items():
        if any(name.startswith(function) for function in SNAPSTART):
            assert permission["Properties"]["FunctionName"]["Ref"].endswith("Aliaslive"), name
