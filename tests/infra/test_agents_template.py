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
from tidelog.kafka.agent import check_sasl
from tidelog.kafka.listeners import parse
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


# The Kafka port's security, as each choice of parameters deploys it -------------------------

COMBINATIONS = [
    # protocol, termination: the load balancer's protocol, the agents' listener, secrets
    ("SASL_SSL", "loadbalancer", "TLS", "SASL_PLAINTEXT", False),
    ("SASL_SSL", "agent", "TCP", "SASL_SSL", True),
    ("SSL", "loadbalancer", "TLS", "PLAINTEXT", False),
    ("SSL", "agent", "TCP", "SSL", True),
    ("SASL_PLAINTEXT", "loadbalancer", "TCP", "SASL_PLAINTEXT", False),
    ("PLAINTEXT", "agent", "TCP", "PLAINTEXT", False),
]


def _evaluate(value: Any, params: dict[str, str], conditions: dict[str, Any]) -> Any:
    """The template's intrinsic functions this stack uses, with these parameters."""
    again = lambda v: _evaluate(v, params, conditions)  # noqa: E731
    if isinstance(value, list):
        return [again(v) for v in value if v != {"Ref": "AWS::NoValue"}]
    if not isinstance(value, dict) or len(value) != 1:
        return {k: again(v) for k, v in value.items()} if isinstance(value, dict) else value
    ((name, arg),) = value.items()
    if name == "Ref":
        return params.get(arg, {"Ref": arg})
    if name in ("Condition", "Fn::Condition"):  # the template's loader reads !Condition so
        return again(conditions[arg])
    if name == "Fn::Equals":
        return again(arg[0]) == again(arg[1])
    if name == "Fn::And":
        return all(again(v) for v in arg)
    if name == "Fn::Or":
        return any(again(v) for v in arg)
    if name == "Fn::Not":
        return not again(arg[0])
    if name == "Fn::If":
        chosen = arg[1] if again(conditions[arg[0]]) else arg[2]
        return None if chosen == {"Ref": "AWS::NoValue"} else again(chosen)
    if name == "Fn::Sub" and isinstance(arg, list):
        text, names = arg[0], {k: again(v) for k, v in arg[1].items()}
        return text.replace("${Protocol}", names["Protocol"])
    if name in ("Fn::GetAtt", "Fn::Sub"):  # other resources' names: left as they are
        return value
    if name.startswith("Fn::"):
        raise AssertionError(f"{name} is not evaluated here")
    return {name: again(arg)}


def _deployed(agents, **chosen: str) -> dict[str, Any]:
    params = {n: p.get("Default", "") for n, p in agents["Parameters"].items()}
    params.update(chosen)
    conditions = agents["Conditions"]
    listener = _evaluate(
        _resources(agents, "AWS::ElasticLoadBalancingV2::Listener"), params, conditions
    )
    (task,) = _resources(agents, "AWS::ECS::TaskDefinition").values()
    (container,) = _evaluate(task["ContainerDefinitions"], params, conditions)
    rules = {
        name: not _evaluate(rule["RuleCondition"], params, conditions)
        or all(_evaluate(a["Assert"], params, conditions) for a in rule["Assertions"])
        for name, rule in agents["Rules"].items()
    }
    return {
        "listener": listener["Listener"],
        "env": {e["Name"]: e["Value"] for e in container["Environment"]},
        "secrets": container.get("Secrets"),
        "rules": rules,
    }


def test_the_kafka_port_defaults_to_tls_sasl_and_acls(agents):
    defaults = {n: p.get("Default") for n, p in agents["Parameters"].items()}
    assert defaults["SecurityProtocol"] == "SASL_SSL"
    assert defaults["TlsTermination"] == "loadbalancer"
    assert defaults["Authorizer"] == "acls"
    deployed = _deployed(agents, CertificateArn="arn:aws:acm:eu-west-1:123456789012:certificate/x")
    assert deployed["listener"]["Protocol"] == "TLS"
    assert deployed["listener"]["SslPolicy"].startswith("ELBSecurityPolicy-TLS13")
    assert deployed["env"]["TIDELOG_KAFKA_AUTHORIZER"] == "acls"
    mechanisms = deployed["env"]["TIDELOG_SASL_ENABLED_MECHANISMS"].split(",")
    check_sasl(mechanisms)  # what the agent accepts
    assert "OAUTHBEARER" in mechanisms
    assert all(deployed["rules"].values())
    assert not all(_deployed(agents)["rules"].values()), "TLS with no certificate is refused"


@pytest.mark.parametrize(("protocol", "termination", "balancer", "agent", "secrets"), COMBINATIONS)
def test_each_choice_deploys_listeners_that_fit_together(
    agents, protocol, termination, balancer, agent, secrets
):
    chosen = {
        "SecurityProtocol": protocol,
        "TlsTermination": termination,
        "CertificateArn": "arn:aws:acm:eu-west-1:123456789012:certificate/x",
        "AgentCertificateSecretArn": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:c",
    }
    deployed = _deployed(agents, **chosen)
    assert deployed["listener"]["Protocol"] == balancer
    (listener,) = parse(deployed["env"]["TIDELOG_KAFKA_LISTENERS"])
    assert (listener.name, listener.port) == (agent, 9092)
    assert (deployed["secrets"] is not None) == secrets
    if secrets:  # what the agent reads them as (tidelog.cli.listening)
        names = {s["Name"] for s in deployed["secrets"]}
        assert names == {"TIDELOG_SSL_CERT_PEM", "TIDELOG_SSL_KEY_PEM"}
    assert all(deployed["rules"].values())


def test_the_agents_certificate_is_readable_by_ecs_only_when_the_agents_end_tls(agents):
    execution = _resources(agents, "AWS::IAM::Role")["ExecutionRole"]
    policies = execution["Policies"]
    assert policies["Fn::If"][0] == "TlsAtAgent"
    ((statement,),) = [p["PolicyDocument"]["Statement"] for p in policies["Fn::If"][1]]
    assert statement["Action"] == "secretsmanager:GetSecretValue"
    assert statement["Resource"] == {"Ref": "AgentCertificateSecretArn"}
    assert policies["Fn::If"][2] == {"Ref": "AWS::NoValue"}


def test_the_main_template_passes_the_kafka_ports_security_on(template, agents):
    nested = template.body["Resources"]["KafkaAgents"]["Properties"]["Parameters"]
    for name in (
        "SecurityProtocol",
        "TlsTermination",
        "CertificateArn",
        "SaslMechanisms",
        "Authorizer",
    ):
        assert nested[name] == {"Ref": f"Kafka{name}"}
        assert template.body["Parameters"][f"Kafka{name}"].get("Default") == agents["Parameters"][
            name
        ].get("Default")
