"""Telemetry figures from Spark progress: journal lag and routing rates."""

from __future__ import annotations

from types import SimpleNamespace

from bridge_job.telemetry import BatchFigures, Metrics, figures_from_progress, journal_lag


def test_journal_lag_sums_partitions_and_tolerates_missing_offsets() -> None:
    assert journal_lag('{"0": 10, "1": 5}', '{"0": 15, "1": 5, "2": 3}') == 8
    assert journal_lag("null", '{"0": 4}') == 0
    assert journal_lag(None, None) == 0


def test_figures_from_progress_and_metrics() -> None:
    observed = SimpleNamespace(
        asDict=lambda: {
            "records": 12,
            "duplicates": 2,
            "published": 8,
            "dead_lettered": 1,
            "skipped": 1,
            "routing_ns": 50_000,
            "tasks": 2,
            "task_ms": 300,
            "span_ms": 200,
        }
    )
    source = SimpleNamespace(endOffset='{"0": 10}', latestOffset='{"0": 30}')
    progress = SimpleNamespace(
        observedMetrics={"routing": observed},
        sources=[source],
        batchId=3,
        numInputRows=10,
        batchDuration=500,
        durationMs={"addBatch": 400},
    )
    figures = figures_from_progress(progress)
    assert figures == BatchFigures(3, 12, 8, 1, 1, 5e-06, 0.5, 20, duplicates=2, tasks=2, parallelism=1.5)
    metrics = Metrics("orders")
    metrics.record_batch(figures)
    value = metrics.registry.get_sample_value
    assert value("jmsbridge_routing_success_rate", {"bridge": "orders"}) == 16.0
    assert value("jmsbridge_routing_failure_rate", {"bridge": "orders"}) == 4.0
    assert value("jmsbridge_routed_messages_total", {"bridge": "orders", "outcome": "deadLettered"}) == 1
    assert value("jmsbridge_journal_lag_records", {"bridge": "orders"}) == 20
    assert value("jmsbridge_redelivered_duplicates_total", {"bridge": "orders"}) == 2
