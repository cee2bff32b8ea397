"""An ingest partition's counts: one shape for the driver's batches and the ingest tasks' rows."""

from __future__ import annotations

import pytest

from bridge_job.config import ConfigError
from bridge_job.ingest.assignment import RUN_ON_ENV, runs_on_executors
from bridge_job.ingest.counts import SUMMARY_SCHEMA, IngestCounts, Journalled
from bridge_job.message import Destination, DestinationKind, JmsMessage
from bridge_job.spark import latency

QUEUE = Destination(DestinationKind.QUEUE, "orders")


def test_a_batch_counts_what_was_journalled_dead_lettered_and_skipped_and_each_timestamped_latency() -> None:
    messages = [JmsMessage(QUEUE, body=str(i), timestamp=ts) for i, ts in enumerate((1_000, 1_990, 0, 1_500))]
    counts = IngestCounts.of(Journalled(messages, dead_lettered=1, skipped=1), committed_ms=2_000)
    assert (counts.received, counts.journalled, counts.dead_lettered, counts.skipped) == (4, 2, 1, 1)
    assert counts.batches == 1
    # 1000 ms, 10 ms and 500 ms; the message without a JMSTimestamp has no latency
    assert (counts.latency_ms, counts.max_latency_ms) == (1_510, 1_000)
    expected = latency.no_latencies()
    for took in (1_000, 10, 500):
        latency.count_latency(expected, took)
    assert counts.latency_buckets == expected


def test_a_row_holds_every_column_of_the_summary_schema_in_order() -> None:
    counts = IngestCounts.of(Journalled([JmsMessage(QUEUE, body="x", timestamp=1)]))
    columns = [column.split()[0] for column in SUMMARY_SCHEMA.split(", ")]
    row = (3, *counts.values(), "connected", "", "host/1/0", 1, 2)
    assert len(row) == len(columns)
    assert list(counts.row(3)) == columns[: len(counts.row(3))]
    assert counts.row(3)["partition"] == 3


@pytest.mark.parametrize(
    ("value", "executors"), [(None, False), ("", False), ("driver", False), ("executors", True)]
)
def test_the_switch_says_where_the_ingest_runs(
    monkeypatch: pytest.MonkeyPatch, value: str | None, executors: bool
) -> None:
    if value is None:
        monkeypatch.delenv(RUN_ON_ENV, raising=False)
    else:
        monkeypatch.setenv(RUN_ON_ENV, value)
    assert runs_on_executors() is executors


def test_a_wrong_switch_says_what_it_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RUN_ON_ENV, "executor")
    with pytest.raises(
        ConfigError, match="JMSBRIDGE_INGEST_RUN_ON='executor': expected one of driver, executors"
    ):
        runs_on_executors()
