"""Reading the SAM template into what the embedded stack builds."""

from __future__ import annotations

import json
import textwrap

import pytest

from tidelog.local.paths import template_path
from tidelog.local.template import Template, TemplateError

SMALL = """
Transform: AWS::Serverless-2016-10-31
Parameters:
  StageName: {Type: String, Default: live}
Globals:
  Function:
    Timeout: 20
    Environment:
      Variables:
        TABLE: !Ref Table
        SHARED: global
Resources:
  Bucket: {Type: AWS::S3::Bucket}
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
  Api:
    Type: AWS::Serverless::Api
    Properties:
      StageName: !Ref StageName
      BinaryMediaTypes: [application~1octet-stream, image~1*]
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: ../functions/fn/
      Handler: app.handler
      MemorySize: 256
      Environment:
        Variables:
          SHARED: own
          ARN: !GetAtt Table.Arn
          URL: !Sub "https://${Api}.execute-api.${AWS::Region}.${AWS::URLSuffix}/${StageName}"
          JOINED: !Join ["-", [a, !Ref Bucket]]
      Events:
        One:
          Type: Api
          Properties: {RestApiId: !Ref Api, Path: "/v1/things/{id}", Method: get}
        Two:
          Type: Api
          Properties: {RestApiId: !Ref Api, Path: /v1/things, Method: post}
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionUri: machine.asl.json
      DefinitionSubstitutions:
        TaskArn: !GetAtt Fn.Arn
"""

ASL = {"StartAt": "Run", "States": {"Run": {"Type": "Task", "Resource": "${TaskArn}", "End": True}}}


@pytest.fixture
def template(tmp_path):
    infra = tmp_path / "infra"
    infra.mkdir()
    (infra / "template.yaml").write_text(textwrap.dedent(SMALL))
    (infra / "machine.asl.json").write_text(json.dumps(ASL))
    return Template(infra / "template.yaml", stack_name="s", region="eu-west-1")


def test_names_follow_the_stack_and_buckets_are_lowercase(template):
    assert template.buckets() == ["s-bucket"]
    assert [t.name for t in template.tables()] == ["s-Table"]


def test_function_environment_merges_globals_and_resolves_intrinsics(template):
    (fn,) = template.functions()
    assert fn.environment == {
        "TABLE": "s-Table",
        "SHARED": "own",
        "ARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/s-Table",
        "URL": "https://s-Api.execute-api.eu-west-1.amazonaws.com/live",
        "JOINED": "a-s-bucket",
    }
    assert (fn.timeout_s, fn.memory_mb, fn.handler) == (20, 256, "app.handler")
    assert fn.code_dir == (template.path.parent.parent / "functions" / "fn").resolve()


def test_routes_and_binary_media_types(template):
    assert [(r.method, r.path, r.function) for r in template.routes()] == [
        ("GET", "/v1/things/{id}", "Fn"),
        ("POST", "/v1/things", "Fn"),
    ]
    assert template.binary_media_types() == ["application/octet-stream", "image/*"]


def test_state_machine_definition_is_the_asl_file_with_substitutions(template):
    (machine,) = template.state_machines()
    definition = json.loads(machine.definition)
    assert definition["States"]["Run"]["Resource"] == (
        "arn:aws:lambda:eu-west-1:123456789012:function:s-Fn"
    )
    assert machine.type == "STANDARD"


def test_unsupported_intrinsics_are_named(template):
    with pytest.raises(TemplateError, match="Fn::If"):
        template.resolve({"Fn::If": ["c", 1, 2]})
    with pytest.raises(TemplateError, match="Nope"):
        template.resolve({"Ref": "Nope"})


def test_the_real_template_reads():
    real = Template(template_path())
    assert {r.path for r in real.routes()} >= {"/v1/health", "/v1/cluster"}
    assert real.buckets()
    assert real.tables()
