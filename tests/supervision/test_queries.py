"""The egress query in-process: one session-scoped SparkSession (local[2]) runs the real query, source,
tasks and all, over a journal on Apache Kafka, as Spark's own data source tests do,
without a job process. The tasks' summary rows come back as each batch's observed figures."""

from __future__ import annotations

import logging
import os
import re
import socket
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from bridge_job.config.spark_settings import SPARK_SETTINGS, with_command_line
from bridge_job.egress.task import SUMMARY_SCHEMA
from bridge_job.message import Destination, DestinationKind
from bridge_job.supervision.driver import MAX_WORKER_RESTARTS, WORKER_START_FAILURE
from bridge_job.supervision.flows import EGRESS
from bridge_job.supervision.queries import flow_query, register_sources, slotted_mode
from bridge_job.supervision.stopping import stop_reason
from bridge_job.supervision.telemetry import EgressBatch, Metrics, egress_progress
from jmsbridge import class_archive
from testbed.brokers import KafkaBroker
from testbed.builders import config
from testbed.harness import read_topics
from tests.support.journal import journal, journalled_bridge, order

pytestmark = pytest.mark.slow  # a Spark session: the quick lane leaves it to the full one


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]").appName("jmsbridge-tests").config("spark.ui.enabled", "false")
    )
    archive = class_archive.jvm_options()  # as BridgeJob gives it to the job's JVM
    given = [("spark.driver.extraJavaOptions", archive)] if archive else []
    for name, value in with_command_line(SPARK_SETTINGS, given).items():
        builder = builder.config(name, value)
    session = builder.getOrCreate()
    register_sources(session)
    yield session
    session.stop()


def run_available(spark: SparkSession, path: str, tmp_path: Path) -> list[EgressBatch]:
    """Run the egress query over what the journal holds (availableNow), then its figures per batch."""
    return [egress_progress(p) for p in progress_of_available(spark, path, tmp_path) if p.numInputRows]


def progress_of_available(spark: SparkSession, path: str, tmp_path: Path) -> list[Any]:
    """Run the egress query over what the journal holds (availableNow), then its progress reports."""
    from bridge_job.config.loading import load_job_config

    config = load_job_config([Path(path)])
    for attempt in range(MAX_WORKER_RESTARTS + 1):
        query = flow_query(spark, EGRESS, path, config, str(tmp_path / "checkpoint"), available_now=True)
        try:
            query.awaitTermination(300)
            return list(query.recentProgress)
        except StreamingQueryException as error:  # what the job's driver turns into its stop line
            # Spark gives a Python worker 10 s to connect back, which a busy machine can miss; the job's
            # driver starts the query again from its checkpoint (supervision.py), and so does this.
            if WORKER_START_FAILURE not in str(error) or attempt == MAX_WORKER_RESTARTS:
                raise AssertionError(stop_reason(error)) from None
    raise AssertionError("unreachable")


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


def scrape(metrics: Metrics) -> dict[str, Any]:
    """The job's `/metrics` over HTTP, parsed as Prometheus parses it: the metric families by name."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    metrics.serve(port, "127.0.0.1")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
    finally:
        metrics.stop()
    return {family.name: family for family in text_string_to_metric_families(text)}


def test_the_metrics_endpoint_serves_counters_and_latency_histograms_of_what_the_tasks_moved(
    spark: SparkSession, kafka: KafkaBroker, tmp_path: Path
) -> None:
    job, path, _ = journalled_bridge(kafka, tmp_path, partitions=2)
    journal(kafka, job, *(order(seq) for seq in range(4)), partition=0)
    journal(kafka, job, order(10), partition=1)
    metrics = Metrics(job.bridge_id)
    for progress in progress_of_available(spark, path, tmp_path):
        metrics.record("egress", progress)  # as the driver's loop does

    families = scrape(metrics)

    def samples(name: str, **labels: str) -> list[float]:
        family = families[re.sub("_(total|bucket|count|sum)$", "", name)]
        return [s.value for s in family.samples if s.name == name and labels.items() <= s.labels.items()]

    assert families["jmsbridge_routed_messages"].type == "counter"
    assert samples("jmsbridge_routed_messages_total", outcome="published") == [5]
    assert samples("jmsbridge_routed_messages_total", outcome="deadLettered") == [0]
    assert families["jmsbridge_journal_records_read"].type == "counter"
    assert samples("jmsbridge_journal_records_read_total") == [5]
    assert families["jmsbridge_routing_seconds"].type == "counter"
    assert 0 < samples("jmsbridge_routing_seconds_total")[0] < 60
    latency = families["jmsbridge_egress_latency_seconds"]
    assert latency.type == "histogram"
    buckets = samples("jmsbridge_egress_latency_seconds_bucket")
    assert buckets == sorted(buckets) and buckets[-1] == 5  # cumulative; every routed record counted once
    assert samples("jmsbridge_egress_latency_seconds_count") == [5]
    assert 0 < samples("jmsbridge_egress_latency_seconds_sum")[0] < 5 * 300  # seconds, not milliseconds
    assert families["jmsbridge_journal_lag_records"].type == "gauge"
    assert samples("jmsbridge_query_tasks", query="egress")[0] >= 1
