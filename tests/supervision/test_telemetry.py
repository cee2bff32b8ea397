"""Telemetry figures from Spark progress: journal lag and routing rates."""

from __future__ import annotations

from types import SimpleNamespace

from bridge_job.supervision.telemetry import BatchFigures, Metrics, figures_from_progress, journal_lag


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


def test_figures_from_progress_and_metrics() -> None:
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
    figures = figures_from_progress(progress)
    expected = BatchFigures(3, 12, 8, 1, 1, 5e-06, 0.5, 20, duplicates=2, markers=1, tasks=2, parallelism=1.5)
    assert figures == expected
    metrics = Metrics("orders")
    metrics.record_batch(figures)
    value = metrics.registry.get_sample_value
    assert value("jmsbridge_routing_success_rate", {"bridge": "orders"}) == 16.0
    assert value("jmsbridge_routing_failure_rate", {"bridge": "orders"}) == 4.0
    assert value("jmsbridge_routed_messages_total", {"bridge": "orders", "outcome": "deadLettered"}) == 1
    assert value("jmsbridge_journal_lag_records", {"bridge": "orders"}) == 20
    assert value("jmsbridge_redelivered_duplicates_total", {"bridge": "orders"}) == 2
    assert value("jmsbridge_journal_epoch_markers_total", {"bridge": "orders"}) == 1
