"""Step Functions really execute on the emulator, and their Lambda tasks run our handlers."""

from __future__ import annotations

import json
import time

from tests.support.devserver import get_json


def run_to_completion(sfn, machine_arn, payload, timeout=30):
    execution = sfn.start_execution(stateMachineArn=machine_arn, input=json.dumps(payload))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        described = sfn.describe_execution(executionArn=execution["executionArn"])
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.1)
    raise AssertionError("the execution did not finish")


def test_a_two_state_machine_runs_the_cluster_handler(dev, dev_client, template, api_event):
    function_arn = template.arn("ClusterFunction")
    definition = {
        "Comment": "Describe the cluster through the real handler, then keep only the body.",
        "StartAt": "Describe",
        "States": {
            "Describe": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": function_arn, "Payload.$": "$"},
                "OutputPath": "$.Payload",
                "Next": "Body",
            },
            "Body": {
                "Type": "Pass",
                "Parameters": {"status.$": "$.statusCode", "body.$": "$.body"},
                "End": True,
            },
        },
    }
    sfn = dev_client("stepfunctions")
    role = dev_client("iam").get_role(RoleName="tidelog-local-execution")["Role"]["Arn"]
    machine = sfn.create_state_machine(
        name="describe-cluster-test", definition=json.dumps(definition), roleArn=role
    )
    result = run_to_completion(sfn, machine["stateMachineArn"], api_event("get_cluster"))
    assert result["status"] == "SUCCEEDED", result
    output = json.loads(result["output"])
    assert output["status"] == 200
    assert json.loads(output["body"]) == get_json(f"{dev.api_url}/v1/cluster")[1]


def test_a_failing_task_fails_the_execution(dev, dev_client, template):
    definition = {
        "StartAt": "Describe",
        "States": {
            "Describe": {"Type": "Task", "Resource": template.arn("ClusterFunction"), "End": True}
        },
    }
    sfn = dev_client("stepfunctions")
    role = dev_client("iam").get_role(RoleName="tidelog-local-execution")["Role"]["Arn"]
    machine = sfn.create_state_machine(
        name="not-an-api-event", definition=json.dumps(definition), roleArn=role
    )
    result = run_to_completion(sfn, machine["stateMachineArn"], {"not": "an API event"})
    assert result["status"] == "FAILED"
