"""Reads the SAM template into what the embedded stack must create.

Only what tidelog's own template uses is understood: buckets, tables, functions with their API
routes and environment, the API's binary media types, and state machines with their ASL file and
substitutions; intrinsics ``Ref``, ``Fn::GetAtt``, ``Fn::Sub`` and ``Fn::Join``. Anything else the
local stack needs raises :class:`TemplateError` naming it, rather than being silently skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tidelog.clusters import DEFAULT_CLUSTER, DEV_ACCOUNT

ACCOUNT_ID = DEV_ACCOUNT  # moto's default account


class TemplateError(ValueError):
    """The template asks for something the embedded stack cannot build."""


class _CfnLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags (``!Ref X`` -> ``{"Ref": "X"}``)."""


def _construct_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    if suffix == "Ref":
        return {"Ref": value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{suffix}": value}


_CfnLoader.add_multi_constructor("!", _construct_tag)


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    function: str


@dataclass(frozen=True)
class FunctionSpec:
    logical_id: str
    name: str
    code_dir: Path
    handler: str
    environment: dict[str, str]
    timeout_s: int
    memory_mb: int
    routes: tuple[Route, ...] = ()
    schedules: tuple[Schedule, ...] = ()


_RATE = re.compile(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)")
_UNIT_S = {"minute": 60, "hour": 3600, "day": 86400}


@dataclass(frozen=True)
class Schedule:
    """An EventBridge schedule of a function: ``rate(...)`` and the event it sends."""

    expression: str
    event: dict[str, Any]

    @property
    def interval_s(self) -> int:
        match = _RATE.fullmatch(self.expression)
        if match is None:
            raise TemplateError(f"only rate(...) schedules run locally, not {self.expression!r}")
        return int(match.group(1)) * _UNIT_S[match.group(2).rstrip("s")]


@dataclass(frozen=True)
class TableSpec:
    logical_id: str
    name: str
    properties: dict[str, Any]


@dataclass(frozen=True)
class StateMachineSpec:
    logical_id: str
    name: str
    definition: str
    type: str = "STANDARD"


@dataclass(frozen=True)
class GatewayResponse:
    """An answer API Gateway gives itself: its status and JSON body template (VTL)."""

    status: int
    template: str

    def render(self, message: str) -> bytes:
        """The body, as API Gateway renders it: ``$context.error.messageString`` is the
        message, quoted."""
        return self.template.replace("$context.error.messageString", json.dumps(message)).encode()


@dataclass
class Template:
    """A parsed template plus the names its resources get in one local stack."""

    path: Path
    stack_name: str = DEFAULT_CLUSTER
    region: str = "us-east-1"
    parameters: Mapping[str, str] = field(default_factory=dict)
    """Values for the template's parameters (a nested stack's, from its parent); the others
    take their defaults."""
    body: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        with self.path.open(encoding="utf-8") as handle:
            self.body = yaml.load(handle, Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass
        self.resources: dict[str, dict[str, Any]] = self.body.get("Resources", {})

    # -- names and references --------------------------------------------------------------

    def physical_name(self, logical_id: str) -> str:
        kind = self._resource(logical_id)["Type"]
        name = f"{self.stack_name}-{logical_id}"
        return name.lower() if kind == "AWS::S3::Bucket" else name

    def arn(self, logical_id: str) -> str:
        kind, name = self._resource(logical_id)["Type"], self.physical_name(logical_id)
        region, account = self.region, ACCOUNT_ID
        arns = {
            "AWS::S3::Bucket": f"arn:aws:s3:::{name}",
            "AWS::DynamoDB::Table": f"arn:aws:dynamodb:{region}:{account}:table/{name}",
            "AWS::Serverless::Function": f"arn:aws:lambda:{region}:{account}:function:{name}",
            "AWS::Serverless::StateMachine": (
                f"arn:aws:states:{region}:{account}:stateMachine:{name}"
            ),
        }
        if kind not in arns:
            raise TemplateError(f"the local stack has no ARN for {logical_id} ({kind})")
        return arns[kind]

    def resolve(self, value: Any) -> Any:
        """``value`` with every intrinsic function replaced by its local value."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1 or not next(iter(value)).startswith(("Ref", "Fn::")):
            return {k: self.resolve(v) for k, v in value.items()}
        ((fn, arg),) = value.items()
        if fn == "Ref":
            return self._ref(arg)
        if fn == "Fn::GetAtt":
            return self._get_att(*arg)
        if fn == "Fn::Sub":
            text, variables = (arg, {}) if isinstance(arg, str) else arg
            return self._substitute(text, {k: str(self.resolve(v)) for k, v in variables.items()})
        if fn == "Fn::Join":
            separator, parts = arg
            return separator.join(str(self.resolve(p)) for p in parts)
        raise TemplateError(f"the local stack does not evaluate {fn}")

    def _ref(self, name: str) -> str:
        pseudo = {
            "AWS::Region": self.region,
            "AWS::AccountId": ACCOUNT_ID,
            "AWS::StackName": self.stack_name,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.parameters:
            return self.parameters[name]
        parameters = self.body.get("Parameters", {})
        if name in parameters:
            return str(parameters[name]["Default"])
        if self._resource(name)["Type"] == "AWS::Serverless::StateMachine":
            return self.arn(name)  # CloudFormation's Ref of a state machine is its ARN
        return self.physical_name(name)

    def _get_att(self, logical_id: str, attribute: str) -> str:
        if attribute == "Arn":
            return self.arn(logical_id)
        if attribute == "Name":
            return self.physical_name(logical_id)
        raise TemplateError(f"the local stack does not know {logical_id}.{attribute}")

    def _substitute(self, text: str, variables: Mapping[str, str]) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in variables:
                return variables[name]
            if "." in name:
                return self._get_att(*name.split(".", 1))
            return self._ref(name)

        return re.sub(r"\$\{([^}!]+)\}", one, text)

    def _resource(self, logical_id: str) -> dict[str, Any]:
        if logical_id not in self.resources:
            raise TemplateError(f"no resource {logical_id!r} in {self.path}")
        return self.resources[logical_id]

    def _of_type(self, kind: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            (lid, r.get("Properties", {})) for lid, r in self.resources.items() if r["Type"] == kind
        ]

    # -- what to build -----------------------------------------------------------------------

    def buckets(self) -> list[str]:
        return [self.physical_name(lid) for lid, _ in self._of_type("AWS::S3::Bucket")]

    def tables(self) -> list[TableSpec]:
        return [
            TableSpec(lid, self.physical_name(lid), self.resolve(props))
            for lid, props in self._of_type("AWS::DynamoDB::Table")
        ]

    def functions(self) -> list[FunctionSpec]:
        defaults = self.body.get("Globals", {}).get("Function", {})
        specs = []
        for lid, props in self._of_type("AWS::Serverless::Function"):
            variables = {
                **defaults.get("Environment", {}).get("Variables", {}),
                **props.get("Environment", {}).get("Variables", {}),
            }
            routes = tuple(
                Route(str(e["Properties"]["Method"]).upper(), e["Properties"]["Path"], lid)
                for e in props.get("Events", {}).values()
                if e["Type"] == "Api"
            )
            schedules = tuple(
                Schedule(
                    str(e["Properties"]["ScheduleExpression"]),
                    json.loads(e["Properties"].get("Input", "{}")),
                )
                for e in props.get("Events", {}).values()
                if e["Type"] == "ScheduleV2"
            )
            specs.append(
                FunctionSpec(
                    logical_id=lid,
                    name=self.physical_name(lid),
                    code_dir=(self.path.parent / props["CodeUri"]).resolve(),
                    handler=props["Handler"],
                    environment={k: str(v) for k, v in self.resolve(variables).items()},
                    timeout_s=int(props.get("Timeout", defaults.get("Timeout", 3))),
                    memory_mb=int(props.get("MemorySize", defaults.get("MemorySize", 128))),
                    routes=routes,
                    schedules=schedules,
                )
            )
        return specs

    def routes(self) -> list[Route]:
        return [route for fn in self.functions() for route in fn.routes]

    def gateway_responses(self) -> dict[str, GatewayResponse]:
        """The API's own answers (no function reached), by API Gateway's response type."""
        found: dict[str, GatewayResponse] = {}
        for _, props in self._of_type("AWS::Serverless::Api"):
            for kind, spec in (props.get("GatewayResponses") or {}).items():
                found[kind] = GatewayResponse(
                    int(spec["StatusCode"]), spec["ResponseTemplates"]["application/json"]
                )
        return found

    def binary_media_types(self) -> list[str]:
        types: list[str] = []
        for _, props in self._of_type("AWS::Serverless::Api"):
            types += [t.replace("~1", "/") for t in props.get("BinaryMediaTypes", [])]
        return types

    def state_machines(self) -> list[StateMachineSpec]:
        machines = []
        for lid, props in self._of_type("AWS::Serverless::StateMachine"):
            if "DefinitionUri" not in props:
                raise TemplateError(f"{lid}: keep the ASL in its own file (DefinitionUri)")
            definition = (self.path.parent / props["DefinitionUri"]).read_text(encoding="utf-8")
            substitutions = {
                k: str(self.resolve(v)) for k, v in props.get("DefinitionSubstitutions", {}).items()
            }
            machines.append(
                StateMachineSpec(
                    lid,
                    self.physical_name(lid),
                    self._substitute(definition, substitutions),
                    str(props.get("Type", "STANDARD")),
                )
            )
        return machines
