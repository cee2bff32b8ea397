"""The egress query, top to bottom: journal ranges -> tasks (read, deduplicate, route, convert, write).

Spark does what it is for: it plans each micro-batch as journal offset ranges, checkpoints them, runs one
task per journal partition on its executors, retries and replays. The records stay inside each task's
Python process from the journal read to the Kafka write (egress_task.py); what reaches Spark is one
summary row per task, collected into the batch's observed metrics for telemetry. Nothing is left for a sink
to do, so the query writes to Spark's `noop` sink.

No stage shuffles: parallelism follows the journal's partitions (`kafka.journalPartitions`), and the
messages of one JMS destination, which share a journal partition, keep their order.

The ingress query (Kafka -> JMS) is built the same way over the kafkaToJms routes' topics
(ingress_source.py, ingress_task.py), with a checkpoint of its own: one task per topic partition, whose
order it keeps on the JMS destination.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from bridge_job.config import JobConfig
from bridge_job.egress_source import EgressSource
from bridge_job.ingress_source import IngressSource
from bridge_job.telemetry import INGRESS_OBSERVATION, OBSERVATION


def register_sources(spark: SparkSession) -> None:
    spark.dataSource.register(EgressSource)
    spark.dataSource.register(IngressSource)


class BatchReports:
    """Each micro-batch's progress report, once, read from the query as cheaply as Spark allows.

    `lastProgress` converts one report; `recentProgress` converts up to 100, and a Python
    StreamingQueryListener costs about 50 ms of JVM time per batch (PySpark rebuilds each event through
    dozens of py4j calls). So: read the last report often, and the recent ones only when batches were
    missed between two reads. Report timestamps are ISO-8601 in UTC, so they order as text.
    """

    def __init__(self, query: StreamingQuery) -> None:
        self.query = query
        self.last_timestamp = ""
        self.last_batch = -1

    def new(self) -> list[Any]:
        last = self.query.lastProgress
        if last is None or last.timestamp <= self.last_timestamp:
            return []
        reports = [last]
        if last.batchId > self.last_batch + 1:
            reports = [p for p in self.query.recentProgress if p.timestamp > self.last_timestamp]
        self.last_timestamp = reports[-1].timestamp
        self.last_batch = max(self.last_batch, *(p.batchId for p in reports))
        return reports


def egress_query(
    spark: SparkSession,
    config_path: str,
    config: JobConfig,
    checkpoint: str,
    available_now: bool = False,
) -> StreamingQuery:
    return _query(spark, EgressSource.name(), OBSERVATION, config_path, config, checkpoint, available_now)


def ingress_query(
    spark: SparkSession,
    config_path: str,
    config: JobConfig,
    checkpoint: str,
    available_now: bool = False,
) -> StreamingQuery:
    """Kafka -> JMS for the kafkaToJms routes, built as the egress query is; its checkpoint is its own."""
    return _query(
        spark, IngressSource.name(), INGRESS_OBSERVATION, config_path, config, checkpoint, available_now
    )


def _query(
    spark: SparkSession,
    source: str,
    observation: str,
    config_path: str,
    config: JobConfig,
    checkpoint: str,
    available_now: bool,
) -> StreamingQuery:
    tasks = spark.readStream.format(source).option("config", config_path).load()
    # One aggregate, the tasks' summary rows as they are: every extra aggregate expression costs Spark
    # generated code per batch, which was a quarter of its CPU when ten of them summed these few rows.
    observed = tasks.observe(observation, F.collect_list(F.struct(*tasks.columns)).alias("tasks"))
    writer = (
        observed.writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .queryName(f"jmsbridge-{config.bridge_id}-{source.removeprefix('jmsbridge-')}")
    )
    interval = config.bridge.spark.trigger_interval_ms
    if available_now:
        writer = writer.trigger(availableNow=True)
    elif interval:
        writer = writer.trigger(processingTime=f"{interval} milliseconds")
    return writer.start()
