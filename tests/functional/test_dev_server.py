"""`tidelog dev` as a user meets it: one command, the API and the emulator on the given ports."""

from __future__ import annotations

import json
import re
import socket
from concurrent.futures import ThreadPoolExecutor

from tests.support import devserver
from tests.support.devserver import get_json


def test_health_and_cluster(dev):
    assert get_json(f"{dev.api_url}/v1/health") == (200, {"status": "ok", "version": "0.1.0"})
    status, body = get_json(f"{dev.api_url}/v1/cluster")
    assert status == 200
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", body["cluster_id"])
    assert get_json(f"{dev.api_url}/v1/cluster")[1] == body  # kept, not regenerated


def test_unknown_routes_answer_as_api_gateway_in_tidelogs_error_shape(dev):
    # The template's GatewayResponses, rendered as API Gateway renders them.
    assert get_json(f"{dev.api_url}/v1/health", method="POST") == (
        403,
        {
            "error": "SASL_AUTHENTICATION_FAILED",
            "error_code": 58,
            "message": "Missing Authentication Token",
            "retriable": False,
        },
    )
    status, body = get_json(f"{dev.api_url}/nowhere")
    assert (status, body["error"]) == (403, "SASL_AUTHENTICATION_FAILED")
    status, body = get_json(
        f"{dev.api_url}/v1/topics",
        method="POST",
        body=b"\xff\xfe not UTF-8",
        headers={"Content-Type": "application/json"},
    )
    assert (status, body["error"], body["retriable"]) == (400, "INVALID_REQUEST", False)


def test_concurrent_requests_each_get_an_environment(dev):
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda _: get_json(f"{dev.api_url}/v1/cluster"), range(64)))
    assert {status for status, _ in results} == {200}
    assert len({body["cluster_id"] for _, body in results}) == 1


def test_the_emulator_speaks_aws_on_its_port(dev, dev_client, template):
    buckets = {b["Name"] for b in dev_client("s3").list_buckets()["Buckets"]}
    assert set(template.buckets()) <= buckets
    tables = dev_client("dynamodb").list_tables()["TableNames"]
    assert {t.name for t in template.tables()} <= set(tables)


def test_dynamodb_streams_work_on_the_emulator(dev_client):
    ddb, streams = dev_client("dynamodb"), dev_client("dynamodbstreams")
    table = ddb.create_table(
        TableName="streamed",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    )["TableDescription"]
    ddb.put_item(TableName="streamed", Item={"pk": {"S": "member-1"}})
    shard = streams.describe_stream(StreamArn=table["LatestStreamArn"])["StreamDescription"][
        "Shards"
    ][0]
    iterator = streams.get_shard_iterator(
        StreamArn=table["LatestStreamArn"],
        ShardId=shard["ShardId"],
        ShardIteratorType="TRIM_HORIZON",
    )["ShardIterator"]
    records = streams.get_records(ShardIterator=iterator)["Records"]
    assert [r["dynamodb"]["NewImage"]["pk"]["S"] for r in records] == ["member-1"]


def test_sigterm_stops_it_cleanly_and_frees_the_ports():
    process = devserver.start()
    status, output = process.stop()
    assert status == 0, output
    assert "stopping" in output
    assert "Traceback" not in output
    for port in (process.api_port, process.aws_port):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # free again


def test_it_takes_its_disk_with_it_as_it_stops(tmp_path):
    """The stack is in memory and gone on exit; so is what its functions and its Kafka TLS
    listener kept on disk (staging, the read cache, the CA), however many times it runs."""
    process = devserver.start("--kafka-tls", "--kafka-tls-port", "0", env={"TMPDIR": str(tmp_path)})
    try:
        records = json.dumps({"records": [{"value": "kept until exit"}]}).encode()
        topic = f"{process.api_url}/v1/topics/scratch"
        json_body = {"Content-Type": "application/json"}
        assert get_json(f"{topic}/records", "POST", records, json_body)[0] == 200
        assert get_json(f"{topic}/partitions/0/records?offset=0")[0] == 200
        (scratch,) = tmp_path.iterdir()
        assert {"staging", "cache", "tls"} <= {p.name for p in scratch.iterdir()}
        assert any((scratch / "cache").iterdir())  # the fetch's object, read through it
    finally:
        status, output = process.stop()
    assert status == 0, output
    assert not any(tmp_path.iterdir())


def test_the_banner_says_what_runs_where():
    process = devserver.start()
    _, output = process.stop()
    assert f"tidelog API   {process.api_url}" in output
    assert f"AWS emulator  {process.aws_url}" in output
    assert f"curl -s {process.api_url}/v1/cluster" in output


def test_a_taken_port_is_a_clear_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        try:
            devserver.start("--aws-port", str(port), timeout=20)
        except RuntimeError as failure:
            message = str(failure)
        else:
            raise AssertionError("tidelog dev started on a taken port")
    assert "Address already in use" in message
    assert "Traceback" not in message
