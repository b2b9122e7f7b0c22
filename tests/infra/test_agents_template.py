"""The Kafka agents' deployment (infra/agents.yaml, nested in the main template): private by
default, least privilege, health-checked and autoscaled, and running the agent as the CLI
parses it."""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from cfnlint.api import lint_file

from tidelog import cli
from tidelog.acl_store import ACL_PK
from tidelog.credentials import SCRAM_PK
from tidelog.local.template import Template

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / "infra" / "agents.yaml"
DOCKERFILE = ROOT / "infra" / "agent.Dockerfile"


@pytest.fixture(scope="module")
def agents() -> dict[str, Any]:
    return Template(AGENTS).body


def _resources(body: dict[str, Any], kind: str) -> dict[str, Any]:
    return {k: r["Properties"] for k, r in body["Resources"].items() if r["Type"] == kind}


def test_cfn_lint_is_clean():
    assert [str(match) for match in lint_file(AGENTS)] == []


def test_the_kafka_port_is_private_by_default_and_reached_only_through_the_load_balancer(agents):
    assert agents["Parameters"]["Scheme"]["Default"] == "internal"
    assert "Default" not in agents["Parameters"]["ClientCidr"], "who may connect is chosen"
    groups = _resources(agents, "AWS::EC2::SecurityGroup")
    (balancer_rule,) = groups["LoadBalancerSecurityGroup"]["SecurityGroupIngress"]
    assert balancer_rule == {
        "IpProtocol": "tcp",
        "FromPort": 9092,
        "ToPort": 9092,
        "CidrIp": {"Ref": "ClientCidr"},
    }
    (agent_rule,) = groups["AgentSecurityGroup"]["SecurityGroupIngress"]
    assert agent_rule["SourceSecurityGroupId"] == {"Ref": "LoadBalancerSecurityGroup"}
    assert "CidrIp" not in agent_rule
    (service,) = _resources(agents, "AWS::ECS::Service").values()
    network = service["NetworkConfiguration"]["AwsvpcConfiguration"]
    assert network["AssignPublicIp"] == "DISABLED"
    assert network["SecurityGroups"] == [{"Ref": "AgentSecurityGroup"}]


def _statements(agents) -> list[dict[str, Any]]:
    role = _resources(agents, "AWS::IAM::Role")["TaskRole"]
    return [s for p in role["Policies"] for s in p["PolicyDocument"]["Statement"]]


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def test_the_task_role_may_do_what_the_request_functions_do_and_nothing_housekeeping_does(
    agents, resources
):
    statements = _statements(agents)
    for statement in statements:
        assert statement["Effect"] == "Allow"
        assert all("*" not in action for action in _as_list(statement["Action"]))
        assert statement["Resource"] != "*"
        assert not any(a.startswith("s3:Delete") for a in _as_list(statement["Action"]))
    mine = _dynamodb(statements)
    for function in ("Produce", "Fetch", "Groups", "Admin", "Cluster"):
        role = resources("AWS::IAM::Role")[f"{function}FunctionRole"]
        theirs = _dynamodb(
            [s for p in role["Properties"]["Policies"] for s in p["PolicyDocument"]["Statement"]]
        )
        assert theirs[0] <= mine[0], (function, theirs[0] - mine[0])
        assert theirs[1] <= mine[1], (function, theirs[1] - mine[1])
    assert "agents" in mine[1], "its own registry entry"
    assert SCRAM_PK in mine[1], (
        "SCRAM logins read the credentials, AlterUserScramCredentials writes"
    )
    assert ACL_PK in mine[1], "the authorizer reads the ACLs, CreateAcls and DeleteAcls write"
    assert not mine[1] & {"gc"}, "garbage collection's queue is housekeeping's alone"


def _dynamodb(statements) -> tuple[set[str], set[str]]:
    """The DynamoDB actions allowed, and the partition keys they are allowed on."""
    actions, keys = set(), set()
    for statement in statements:
        found = {a for a in _as_list(statement["Action"]) if a.startswith("dynamodb:")}
        if found:
            actions |= found
            condition = statement["Condition"]
            kind = next(iter(condition))
            keys |= set(condition[kind]["dynamodb:LeadingKeys"])
    return actions, keys


def test_agents_are_health_checked_and_scale_on_cpu(agents):
    (group,) = _resources(agents, "AWS::ElasticLoadBalancingV2::TargetGroup").values()
    assert (group["Protocol"], group["Port"], group["TargetType"]) == ("TCP", 9092, "ip")
    assert group["HealthCheckProtocol"] == "TCP"
    (task,) = _resources(agents, "AWS::ECS::TaskDefinition").values()
    (container,) = task["ContainerDefinitions"]
    assert container["HealthCheck"]["Command"][0] == "CMD"
    (service,) = _resources(agents, "AWS::ECS::Service").values()
    assert service["DeploymentConfiguration"]["DeploymentCircuitBreaker"] == {
        "Enable": True,
        "Rollback": True,
    }
    (policy,) = _resources(agents, "AWS::ApplicationAutoScaling::ScalingPolicy").values()
    tracking = policy["TargetTrackingScalingPolicyConfiguration"]
    metric = tracking["PredefinedMetricSpecification"]["PredefinedMetricType"]
    assert metric == "ECSServiceAverageCPUUtilization"


def test_the_container_runs_the_agent_as_the_cli_parses_it(agents):
    (task,) = _resources(agents, "AWS::ECS::TaskDefinition").values()
    (container,) = task["ContainerDefinitions"]
    command = container["Command"]
    assert command[0] == "tidelog"
    args = cli.parser().parse_args(command[1:])
    assert (args.command, args.host, args.kafka_port) == ("agent", "0.0.0.0", 9092)
    assert container["PortMappings"] == [{"ContainerPort": 9092, "Protocol": "tcp"}]
    env = {e["Name"] for e in container["Environment"]}
    assert {"TIDELOG_TABLE", "TIDELOG_BUCKET", "TIDELOG_ASSIGNMENT_STATE_MACHINE"} <= env
    assert "TIDELOG_ADVERTISED_HOST" in env  # else clients are told the task's own name
    cmd = next(line for line in DOCKERFILE.read_text().splitlines() if line.startswith("CMD"))
    assert yaml.safe_load(cmd.removeprefix("CMD ")) == command


def test_the_image_copies_everything_the_package_build_reads():
    copied = [
        shlex.split(line)[1:-1]
        for line in DOCKERFILE.read_text().splitlines()
        if line.startswith("COPY ")
    ]
    sources = {Path(s).as_posix() for group in copied for s in group}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    hatch = project["tool"]["hatch"]
    wheel = hatch["build"]["targets"]["wheel"]
    needed = [
        "pyproject.toml",
        project["project"]["readme"],
        hatch["version"]["path"],
        *wheel["packages"],
        *wheel["force-include"],
    ]
    for path in needed:
        assert (ROOT / path).exists(), path
        assert any(path == s or path.startswith(f"{s}/") for s in sources), path


def test_the_main_template_nests_the_agents_only_when_an_image_is_given(template, agents):
    nested = template.body["Resources"]["KafkaAgents"]
    assert nested["Condition"] == "DeployKafkaAgents"
    assert nested["Properties"]["TemplateURL"] == "agents.yaml"
    required = {n for n, p in agents["Parameters"].items() if "Default" not in p}
    assert required <= set(nested["Properties"]["Parameters"])
    assert template.body["Parameters"]["KafkaAgentImage"]["Default"] == ""
    assert template.body["Conditions"]["DeployKafkaAgents"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "KafkaAgentImage"}, ""]}]
    }
