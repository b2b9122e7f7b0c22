"""What the emulator asks IAM for each request (tidelog.local.iam.calls), from the requests
botocore itself makes: the wire format is botocore's, not a guess of ours."""

from __future__ import annotations

import types
import urllib.parse

import boto3
import pytest

from tidelog.local.iam import Enforcer, Refusal, access_denied, calls
from tidelog.local.iam.calls import UNNAMED, Account, Request, Table, needs_body
from tidelog.local.iam.policy import Call, Policy

ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/meta"
ACCOUNT = Account(
    "123456789012",
    "us-east-1",
    {"meta": Table(ARN, "pk", {"by-owner": "owner"})},
    frozenset({"data-bucket"}),
)
MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:assign"


class Sent(Exception):
    pass


def _client(service: str):
    return boto3.session.Session().client(
        service,
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:1",
        aws_access_key_id="k",
        aws_secret_access_key="s",
    )


def sent(service: str, operation: str, **params) -> Request:
    client = _client(service)
    captured = []

    def grab(request, **_):
        captured.append(request)
        raise Sent

    client.meta.events.register("before-send", grab)
    with pytest.raises(Sent):
        getattr(client, operation)(**params)
    (request,) = captured
    url = urllib.parse.urlsplit(request.url)
    body = request.body or b""
    if hasattr(body, "read"):
        body = body.read()
    if isinstance(body, str):
        body = body.encode()
    headers = {
        k.lower(): v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()
    }
    headers["host"] = url.netloc
    return Request(request.method, urllib.parse.unquote(url.path), url.query, headers, body)


def asked(service: str, operation: str, **params) -> list[Call]:
    return calls(sent(service, operation, **params), ACCOUNT)


def keys(*values: str) -> dict:
    return {"dynamodb:LeadingKeys": list(values)}


def test_an_item_call_names_its_partition_key():
    key = {"pk": {"S": "topics"}, "sk": {"S": "t"}}
    assert asked("dynamodb", "get_item", TableName="meta", Key=key) == [
        Call("dynamodb:GetItem", ARN, keys("topics"))
    ]
    assert asked("dynamodb", "put_item", TableName="meta", Item={**key, "v": {"N": "1"}}) == [
        Call("dynamodb:PutItem", ARN, keys("topics"))
    ]
    assert asked("dynamodb", "delete_item", TableName="meta", Key=key) == [
        Call("dynamodb:DeleteItem", ARN, keys("topics"))
    ]


def test_a_transaction_is_authorized_item_by_item():
    items = [
        {"Put": {"TableName": "meta", "Item": {"pk": {"S": "log#a"}, "sk": {"S": "1"}}}},
        {
            "ConditionCheck": {
                "TableName": "meta",
                "Key": {"pk": {"S": "topics"}, "sk": {"S": "t"}},
                "ConditionExpression": "attribute_exists(pk)",
            }
        },
        {"Delete": {"TableName": "meta", "Key": {"pk": {"S": "due#1"}, "sk": {"S": "x"}}}},
    ]
    assert asked("dynamodb", "transact_write_items", TransactItems=items) == [
        Call("dynamodb:PutItem", ARN, keys("log#a")),
        Call("dynamodb:ConditionCheckItem", ARN, keys("topics")),
        Call("dynamodb:DeleteItem", ARN, keys("due#1")),
    ]


def test_a_batch_names_every_partition_key_it_touches():
    request = {
        "meta": {
            "Keys": [
                {"pk": {"S": "log#a"}, "sk": {"S": "h"}},
                {"pk": {"S": "log#b"}, "sk": {"S": "h"}},
            ]
        }
    }
    assert asked("dynamodb", "batch_get_item", RequestItems=request) == [
        Call("dynamodb:BatchGetItem", ARN, keys("log#a", "log#b"))
    ]
    writes = {
        "meta": [
            {"PutRequest": {"Item": {"pk": {"S": "gc"}, "sk": {"S": "1"}}}},
            {"DeleteRequest": {"Key": {"pk": {"S": "orphans"}, "sk": {"S": "2"}}}},
        ]
    }
    assert asked("dynamodb", "batch_write_item", RequestItems=writes) == [
        Call("dynamodb:BatchWriteItem", ARN, keys("gc", "orphans"))
    ]


def test_a_query_names_the_partition_key_it_compares_by_name_or_placeholder():
    plain = asked(
        "dynamodb",
        "query",
        TableName="meta",
        KeyConditionExpression="pk = :p AND begins_with(sk, :s)",
        ExpressionAttributeValues={":p": {"S": "group#g"}, ":s": {"S": "m"}},
    )
    named = asked(
        "dynamodb",
        "query",
        TableName="meta",
        KeyConditionExpression="#sk > :s AND #pk = :p",
        ExpressionAttributeNames={"#pk": "pk", "#sk": "sk"},
        ExpressionAttributeValues={":p": {"S": "group#g"}, ":s": {"S": "m"}},
    )
    assert plain == named == [Call("dynamodb:Query", ARN, keys("group#g"))]


def test_a_query_of_an_index_names_the_index_and_its_partition_key():
    assert asked(
        "dynamodb",
        "query",
        TableName="meta",
        IndexName="by-owner",
        KeyConditionExpression="#o = :o",
        ExpressionAttributeNames={"#o": "owner"},
        ExpressionAttributeValues={":o": {"S": "me"}},
    ) == [Call("dynamodb:Query", f"{ARN}/index/by-owner", keys("me"))]


def test_a_scan_names_no_key_and_an_unknown_table_gets_its_arn():
    assert asked("dynamodb", "scan", TableName="meta") == [Call("dynamodb:Scan", ARN)]
    other = ARN.replace("meta", "other")
    assert asked("dynamodb", "describe_table", TableName="other") == [
        Call("dynamodb:DescribeTable", other)
    ]


def test_object_calls_name_the_object():
    obj = "arn:aws:s3:::data-bucket/data/flush/1"
    assert asked("s3", "put_object", Bucket="data-bucket", Key="data/flush/1", Body=b"x") == [
        Call("s3:PutObject", obj)
    ]
    assert asked(
        "s3", "get_object", Bucket="data-bucket", Key="data/flush/1", Range="bytes=0-1"
    ) == [Call("s3:GetObject", obj)]
    assert asked("s3", "head_object", Bucket="data-bucket", Key="data/flush/1") == [
        Call("s3:GetObject", obj)
    ]
    assert asked("s3", "delete_object", Bucket="data-bucket", Key="data/flush/1") == [
        Call("s3:DeleteObject", obj)
    ]


def test_a_copy_reads_its_source_too():
    assert asked(
        "s3", "copy_object", Bucket="data-bucket", Key="segments/b", CopySource="data-bucket/data/a"
    ) == [
        Call("s3:PutObject", "arn:aws:s3:::data-bucket/segments/b"),
        Call("s3:GetObject", "arn:aws:s3:::data-bucket/data/a"),
    ]


def test_a_listing_names_its_prefix_and_a_multi_delete_every_key():
    assert asked("s3", "list_objects_v2", Bucket="data-bucket", Prefix="data/") == [
        Call("s3:ListBucket", "arn:aws:s3:::data-bucket", {"s3:prefix": ["data/"]})
    ]
    assert asked("s3", "list_objects_v2", Bucket="data-bucket") == [
        Call("s3:ListBucket", "arn:aws:s3:::data-bucket", {})
    ]
    deleted = asked(
        "s3",
        "delete_objects",
        Bucket="data-bucket",
        Delete={"Objects": [{"Key": "data/a"}, {"Key": "segments/b"}]},
    )
    assert deleted == [
        Call("s3:DeleteObject", "arn:aws:s3:::data-bucket/data/a"),
        Call("s3:DeleteObject", "arn:aws:s3:::data-bucket/segments/b"),
    ]


def test_bucket_calls():
    assert asked("s3", "create_bucket", Bucket="data-bucket") == [
        Call("s3:CreateBucket", "arn:aws:s3:::data-bucket")
    ]
    assert asked("s3", "list_buckets") == [Call("s3:ListAllMyBuckets", "*")]


def test_step_functions_lambda_and_query_protocol_services():
    assert asked("stepfunctions", "start_execution", stateMachineArn=MACHINE, input="{}") == [
        Call("states:StartExecution", MACHINE)
    ]
    assert asked("lambda", "invoke", FunctionName="assignor") == [
        Call("lambda:InvokeFunction", "arn:aws:lambda:us-east-1:123456789012:function:assignor")
    ]
    assert asked("cloudformation", "describe_stacks", StackName="tidelog") == [
        Call("cloudformation:DescribeStacks", "*")
    ]
    assert asked("sts", "get_caller_identity") == []  # needs no permission on AWS


def test_a_request_no_rule_names_is_unnamed_not_allowed():
    bare = Request("GET", "/", "", {}, b"")
    assert calls(bare, ACCOUNT) == [Call(UNNAMED, "*")]
    enforcer = Enforcer(
        ACCOUNT,
        {
            "role": Policy.parse(
                [{"Statement": {"Effect": "Allow", "Action": "*", "Resource": "*"}}]
            )
        },
    )
    refusal = enforcer.refusal(["role"], bare)
    assert refusal is not None
    assert "names no action" in refusal.message


def test_only_a_multi_object_delete_of_s3_needs_its_body_read():
    put = sent("s3", "put_object", Bucket="data-bucket", Key="k", Body=b"x")
    delete = sent("s3", "delete_objects", Bucket="data-bucket", Delete={"Objects": [{"Key": "k"}]})
    item = sent("dynamodb", "get_item", TableName="meta", Key={"pk": {"S": "a"}})
    assert not needs_body(put.method, put.headers, put.query)
    assert needs_body(delete.method, delete.headers, delete.query)
    assert needs_body(item.method, item.headers, item.query)


def test_every_role_named_must_allow_every_call():
    reader = Policy.parse(
        [{"Statement": {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}}]
    )
    writer = Policy.parse([{"Statement": {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}}])
    enforcer = Enforcer(ACCOUNT, {"reader": reader, "writer": writer})
    put = sent("s3", "put_object", Bucket="data-bucket", Key="k", Body=b"x")
    assert enforcer.refusal(["writer"], put) is None
    refusal = enforcer.refusal(["writer", "reader"], put)
    assert refusal is not None
    assert refusal.principal == "reader"
    assert refusal.message.startswith("User: reader is not authorized to perform: s3:PutObject")
    unknown = enforcer.refusal(["nobody"], put)
    assert unknown is not None
    assert "knows no such role" in unknown.message


@pytest.mark.parametrize(
    ("service", "operation", "params", "expected"),
    [
        (
            "dynamodb",
            "get_item",
            {"TableName": "meta", "Key": {"pk": {"S": "a"}}},
            "AccessDeniedException",
        ),
        ("stepfunctions", "start_execution", {"stateMachineArn": MACHINE}, "AccessDeniedException"),
        ("s3", "get_object", {"Bucket": "data-bucket", "Key": "k"}, "AccessDenied"),
        ("lambda", "invoke", {"FunctionName": "f"}, "AccessDeniedException"),
        ("cloudformation", "describe_stacks", {"StackName": "s"}, "AccessDenied"),
    ],
)
def test_botocore_reads_a_refusal_as_the_service_would_send_it(
    service, operation, params, expected
):
    """The emulator's AccessDenied, parsed by botocore's own parser for the service's protocol:
    the code and the message reach the caller as AWS's would."""
    from botocore.awsrequest import AWSResponse
    from botocore.exceptions import ClientError

    request = sent(service, operation, **params)
    environ = {"HTTP_" + k.upper().replace("-", "_"): v for k, v in request.headers.items()}
    refusal = Refusal("arn:aws:iam::1:role/r", Call("x:Y", "arn:z"), "because no")
    status: list[str] = []
    headers: list[list[tuple[str, str]]] = []
    body = b"".join(
        access_denied(refusal, environ, lambda s, h: (status.append(s), headers.append(h)))
    )
    client = _client(service)

    def answer(**_):
        raw = types.SimpleNamespace(stream=lambda **__: iter([body]))
        return AWSResponse("http://x", int(status[0].split()[0]), dict(headers[0]), raw)

    client.meta.events.register("before-send", answer)
    with pytest.raises(ClientError) as caught:
        getattr(client, operation)(**params)
    error = caught.value.response["Error"]
    assert error["Code"] == expected
    assert error["Message"] == refusal.message
