"""Each invocation flushes exactly the metrics it added, even when `tidelog dev` runs many at
once in one process (tidelog.telemetry)."""

from __future__ import annotations

import json
import threading

from tidelog.telemetry import Metrics, MetricUnit


def test_concurrent_invocations_flush_their_own_metrics_and_never_fail(capsys):
    metrics = Metrics(namespace="tidelog", service="produce")
    both_added = threading.Barrier(2)
    first_flushed = threading.Event()
    failures = []

    @metrics.log_metrics
    def handler(name, flush_first):
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
        both_added.wait()
        if not flush_first:
            first_flushed.wait()  # the other invocation flushes while this one holds a metric
        return name

    def invoke(name, flush_first):
        try:
            handler(name, flush_first)
        except Exception as exc:  # what powertools' shared metric set raised: nothing added
            failures.append(exc)
        finally:
            first_flushed.set()

    threads = [
        threading.Thread(target=invoke, args=("Early", True)),
        threading.Thread(target=invoke, args=("Late", False)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert failures == []
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    flushed = [
        [m["Name"] for m in line["_aws"]["CloudWatchMetrics"][0]["Metrics"]] for line in lines
    ]
    assert flushed == [["Early"], ["Late"]]


def test_an_invocation_that_added_nothing_prints_nothing(capsys):
    metrics = Metrics(namespace="tidelog", service="fetch")
    assert metrics.log_metrics(lambda: 7)() == 7
    assert capsys.readouterr().out == ""
