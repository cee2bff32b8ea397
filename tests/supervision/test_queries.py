"""The egress query in-process: one session-scoped SparkSession (local[2]) runs the real query, source,
tasks and all, over a journal on a real Kafka broker (noida-db), as Spark's own data source tests do,
without a job process. The tasks' summary rows come back as each batch's observed figures."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from bridge_job.config.spark_settings import SPARK_SETTINGS
from bridge_job.journal_to_kafka.task import SUMMARY_SCHEMA
from bridge_job.message import Destination, DestinationKind
from bridge_job.supervision.queries import egress_query, register_sources, slotted_mode
from bridge_job.supervision.stopping import stop_reason
from bridge_job.supervision.telemetry import BatchFigures, figures_from_progress
from tests.brokers import KafkaBroker
from tests.support.builders import config
from tests.support.harness import read_topics
from tests.support.journal import journal, journalled_bridge, order


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]").appName("jmsbridge-tests").config("spark.ui.enabled", "false")
    )
    for name, value in SPARK_SETTINGS.items():
        builder = builder.config(name, value)
    session = builder.getOrCreate()
    register_sources(session)
    yield session
    session.stop()


def run_available(spark: SparkSession, path: str, tmp_path: Path) -> list[BatchFigures]:
    """Run the egress query over what the journal holds (availableNow), then its figures per batch."""
    from bridge_job.config.loading import load_job_config

    config = load_job_config([Path(path)])
    query = egress_query(spark, path, config, str(tmp_path / "checkpoint"), available_now=True)
    try:
        query.awaitTermination(300)
    except StreamingQueryException as error:  # what the job's driver turns into its stop line
        raise AssertionError(stop_reason(error)) from None
    return [figures_from_progress(p) for p in query.recentProgress if p.numInputRows]


def test_each_batch_runs_a_task_per_journal_partition_and_reports_records(
    spark: SparkSession, kafka: KafkaBroker, tmp_path: Path
) -> None:
    job, path, topic = journalled_bridge(kafka, tmp_path, partitions=2, spark={"maxRecordsPerBatch": 6})
    other = Destination(DestinationKind.QUEUE, "orders.eu")
    journal(kafka, job, *(order(seq) for seq in range(6)), partition=0)
    journal(kafka, job, *(order(seq, queue=other) for seq in range(100, 106)), partition=1)

    figures = run_available(spark, path, tmp_path)

    # 12 records, at most 6 a batch, shared fairly: two batches of 3 + 3, one task per partition each.
    assert [(f.input_records, f.published, f.tasks) for f in figures] == [(6, 6, 2), (6, 6, 2)]
    records = read_topics(kafka, [topic], 12, settle=0.5)
    by_queue = {
        name: [
            int(r.key or b"-1")
            for r in records
            if r.header("jms.JMSDestination") == f"queue://{name}".encode()
        ]
        for name in ("orders.in", "orders.eu")
    }
    assert by_queue == {"orders.in": list(range(6)), "orders.eu": list(range(100, 106))}  # order per queue
    assert SUMMARY_SCHEMA.startswith("partition INT")


def test_a_restarted_query_continues_where_its_checkpoint_says(
    spark: SparkSession, kafka: KafkaBroker, tmp_path: Path
) -> None:
    job, path, topic = journalled_bridge(kafka, tmp_path)
    journal(kafka, job, *(order(seq) for seq in range(3)))
    assert sum(f.input_records for f in run_available(spark, path, tmp_path)) == 3
    journal(kafka, job, *(order(seq) for seq in range(3, 5)))
    assert sum(f.input_records for f in run_available(spark, path, tmp_path)) == 2  # only the new ones
    assert [r.key for r in read_topics(kafka, [topic], 5, settle=0.5)] == [b"0", b"1", b"2", b"3", b"4"]


def test_a_fail_policy_stops_the_query_with_the_bridges_stop_line(
    spark: SparkSession, kafka: KafkaBroker, tmp_path: Path
) -> None:
    job, path, _ = journalled_bridge(kafka, tmp_path)
    journal(kafka, job, order(1, kind="unknown"))
    with pytest.raises(AssertionError, match=r"^message ID:1 from queue://orders.in .*NoRoute.*policy fail"):
        run_available(spark, path, tmp_path)


def test_real_time_tasks_that_would_not_all_fit_run_in_micro_batches_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bridge = config()
    assert slotted_mode(bridge, False, tasks=2, slots=2, what="egress") == "realTime"
    assert slotted_mode(bridge, True, tasks=2, slots=2, what="egress") == "microBatch"  # availableNow
    with caplog.at_level(logging.WARNING):
        assert slotted_mode(bridge, False, tasks=3, slots=2, what="ingress") == "microBatch"
    assert "the ingress query runs in micro-batch mode" in caplog.text
    assert "its 3 tasks side by side and the job has 2 task slots" in caplog.text
