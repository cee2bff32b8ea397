"""Telemetry figures from Spark progress: journal lag and routing rates."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from bridge_job.kube.health import ConnectionHealth
from bridge_job.spark.latency import BOUNDS, count_latency, no_latencies
from bridge_job.supervision.telemetry import (
    INGRESS_OBSERVATION,
    NATS_OBSERVATION,
    NATS_OUTCOMES,
    EgressBatch,
    Metrics,
    egress_progress,
    journal_lag,
)
from testbed.builders import progress


def test_journal_lag_sums_partitions_and_tolerates_missing_offsets() -> None:
    assert journal_lag('{"0": 10, "1": 5}', '{"0": 15, "1": 5, "2": 3}') == 8
    assert journal_lag("null", '{"0": 4}') == 0
    assert journal_lag(None, None) == 0


def task(partition: int, started: int, ended: int, **counts: int) -> dict[str, int | bool]:
    row: dict[str, int | bool] = {
        "partition": partition,
        "records": 0,
        "duplicates": 0,
        "published": 0,
        "dead_lettered": 0,
    }
    row |= {
        "skipped": 0,
        "loops": 0,
        "markers": 0,
        "routing_ns": 0,
        "started_ms": started,
        "ended_ms": ended,
        "replayed": False,
    }
    return row | counts


def test_egress_progress_and_metrics() -> None:
    # Two tasks, 150 ms each, side by side for 100 of the batch's 200 ms: parallelism 1.5.
    tasks = [
        task(0, 1000, 1150, records=7, duplicates=2, published=4, dead_lettered=1, routing_ns=25_000),
        task(1, 1050, 1200, records=5, published=4, skipped=1, markers=1, routing_ns=25_000),
    ]
    source = SimpleNamespace(endOffset='{"0": 10}', latestOffset='{"0": 30}')
    progress = SimpleNamespace(
        observedMetrics={"routing": {"tasks": tasks}},
        sources=[source],
        batchId=3,
        numInputRows=2,
        batchDuration=500,
        durationMs={"addBatch": 400},
    )
    figures = egress_progress(progress)
    expected = EgressBatch(3, 12, 8, 1, 1, 5e-06, 0.5, 20, duplicates=2, markers=1, tasks=2, parallelism=1.5)
    assert figures == expected
    metrics = Metrics("orders")
    metrics.record("egress", progress)
    value = metrics.registry.get_sample_value
    assert value("jmsbridge_journal_records_read_total", {"bridge": "orders"}) == 12
    assert value("jmsbridge_routed_messages_total", {"bridge": "orders", "outcome": "published"}) == 8
    assert value("jmsbridge_routed_messages_total", {"bridge": "orders", "outcome": "deadLettered"}) == 1
    assert value("jmsbridge_routing_seconds_total", {"bridge": "orders"}) == 50_000 / 1e9
    assert value("jmsbridge_query_tasks", {"bridge": "orders", "query": "egress"}) == 2
    assert value("jmsbridge_journal_lag_records", {"bridge": "orders"}) == 20
    assert value("jmsbridge_redelivered_duplicates_total", {"bridge": "orders"}) == 2
    assert value("jmsbridge_journal_epoch_markers_total", {"bridge": "orders"}) == 1


def test_latencies_counted_per_bucket_in_the_tasks_add_up_to_a_histogram_in_seconds() -> None:
    first, second = no_latencies(), no_latencies()
    for took_ms in (3, 5, 6, 240):  # 5 ms is in the 0.005 bucket (upper bounds are inclusive)
        count_latency(first, took_ms)
    count_latency(second, 70_000)  # past the last bound: +Inf only
    rows = [
        task(0, 0, 10, published=4, latency_ms=254, latency_buckets=first),  # type: ignore[arg-type]
        task(1, 0, 10, published=1, latency_ms=70_000, latency_buckets=second),  # type: ignore[arg-type]
    ]
    progress = SimpleNamespace(
        observedMetrics={"routing": {"tasks": rows}}, sources=[], batchId=1, batchDuration=10, durationMs={}
    )
    metrics = Metrics("orders")
    metrics.record("egress", progress)
    metrics.record("egress", progress)

    def bucket(le: str) -> float | None:
        labels = {"bridge": "orders", "le": le}
        return metrics.registry.get_sample_value("jmsbridge_egress_latency_seconds_bucket", labels)

    assert [bucket(le) for le in ("0.005", "0.01", "0.25", "60.0", "+Inf")] == [4, 6, 8, 8, 10]
    value = metrics.registry.get_sample_value
    assert value("jmsbridge_egress_latency_seconds_count", {"bridge": "orders"}) == 10
    assert value("jmsbridge_egress_latency_seconds_sum", {"bridge": "orders"}) == 2 * 70.254
    assert BOUNDS[0] == 0.005 and BOUNDS[-1] == 60.0


def test_connection_state_role_and_queries_are_gauges() -> None:
    metrics = Metrics("orders")
    jms = ConnectionHealth(None, 300, "jms", metrics.connection("jms"))
    value = metrics.registry.get_sample_value
    jms.back("JMS")
    assert value("jmsbridge_connected", {"bridge": "orders", "system": "jms"}) == 1
    jms.failing("JMS source orders.in", "connection refused")
    assert value("jmsbridge_connected", {"bridge": "orders", "system": "jms"}) == 0
    role = {"bridge": "orders", "bridge_instance": "primary"}
    assert value("jmsbridge_active", role) is None  # no instance yet: nothing to say
    metrics.follow_role("primary", None)
    assert value("jmsbridge_active", role) == 0  # starting
    metrics.running()
    assert value("jmsbridge_active", role) == 1  # no standby: active once it runs
    metrics.record_queries(["egress", "ingress"], [True, False])
    assert value("jmsbridge_query_active", {"bridge": "orders", "query": "ingress"}) == 0


def test_every_flow_records_its_batch_through_one_door(caplog: pytest.LogCaptureFixture) -> None:
    """The ingress's and the NATS task's rows go where the egress's go (`Metrics.record`): their counters,
    their lag, their tasks and their log line, each under its query's name."""
    caplog.set_level(logging.INFO, logger="jmsbridge.telemetry")
    metrics = Metrics("orders")
    value = metrics.registry.get_sample_value
    ingress_rows = [
        {"topic": "in", "partition": 0, "records": 5, "sent": 4, "dead_lettered": 1, "skipped": 0, "loops": 0,
         "retries": 1, "latency_ms": 40, "max_latency_ms": 20, "started_ms": 0, "ended_ms": 10},
        {"topic": "in", "partition": 1, "records": 2, "sent": 1, "dead_lettered": 0, "skipped": 0, "loops": 1,
         "retries": 0, "latency_ms": 10, "max_latency_ms": 10, "started_ms": 0, "ended_ms": 10},
    ]  # fmt: skip
    source = SimpleNamespace(endOffset='{"in:0": 5, "in:1": 2}', latestOffset='{"in:0": 9, "in:1": 2}')
    metrics.record("ingress", progress(INGRESS_OBSERVATION, *ingress_rows, sources=[source], batchId=7))
    ingress = {"bridge": "orders", "outcome": "sent"}
    assert value("jmsbridge_ingress_records_total", ingress) == 5
    assert value("jmsbridge_ingress_records_total", ingress | {"outcome": "deadLettered"}) == 1
    assert value("jmsbridge_ingress_records_total", ingress | {"outcome": "loop"}) == 1
    assert value("jmsbridge_ingress_retries_total", {"bridge": "orders"}) == 1
    assert value("jmsbridge_ingress_lag_records", {"bridge": "orders", "topic": "in", "partition": "0"}) == 4
    assert value("jmsbridge_query_tasks", {"bridge": "orders", "query": "ingress"}) == 2
    assert '"batch_id": 7' in caplog.text and "ingress batch " in caplog.text

    counts = dict.fromkeys(NATS_OUTCOMES, 0) | {"started_ms": 0, "ended_ms": 10}
    row = counts | {"route": "requests", "received": 3, "requests": 3, "replies": 2, "timeouts": 1}
    metrics.record("nats", progress(NATS_OBSERVATION, row, {**counts, "route": "quiet"}))
    nats = {"bridge": "orders", "route": "requests"}
    assert value("jmsbridge_nats_messages_total", nats | {"outcome": "replies"}) == 2
    assert value("jmsbridge_nats_messages_total", nats | {"outcome": "timeouts"}) == 1
    assert value("jmsbridge_query_tasks", {"bridge": "orders", "query": "nats"}) == 1  # a row per route
    assert "nats interval " in caplog.text and '"route": "quiet"' not in caplog.text
