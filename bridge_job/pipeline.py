"""The egress query, top to bottom: journal ranges -> tasks (read, deduplicate, route, convert, write).

Spark does what it is for: it plans each micro-batch as journal offset ranges, checkpoints them, runs one
task per journal partition on its executors, retries and replays. The records stay inside each task's
Python process from the journal read to the Kafka write (egress_task.py); what reaches Spark is one
summary row per task, summed into the batch's observed metrics for telemetry. Nothing is left for a sink
to do, so the query writes to Spark's `noop` sink.

No stage shuffles: parallelism follows the journal's partitions (`kafka.journalPartitions`), and the
messages of one JMS destination, which share a journal partition, keep their order.
"""

from __future__ import annotations

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from bridge_job.config import JobConfig
from bridge_job.egress_source import EgressSource
from bridge_job.telemetry import OBSERVATION


def register_sources(spark: SparkSession) -> None:
    spark.dataSource.register(EgressSource)


def _total(column: str) -> Column:
    return F.coalesce(F.sum(column), F.lit(0)).alias(column)


def egress_query(
    spark: SparkSession,
    config_path: str,
    config: JobConfig,
    checkpoint: str,
    available_now: bool = False,
) -> StreamingQuery:
    tasks = spark.readStream.format(EgressSource.name()).option("config", config_path).load()
    observed = tasks.observe(
        OBSERVATION,
        *(
            _total(c)
            for c in ("records", "duplicates", "published", "dead_lettered", "skipped", "routing_ns")
        ),
        F.count(F.lit(1)).alias("tasks"),
        F.coalesce(F.sum(F.col("ended_ms") - F.col("started_ms")), F.lit(0)).alias("task_ms"),
        F.coalesce(F.max("ended_ms") - F.min("started_ms"), F.lit(0)).alias("span_ms"),
        F.count(F.when(F.col("replayed"), 1)).alias("replayed_tasks"),
    )
    writer = (
        observed.writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .queryName(f"jmsbridge-{config.bridge_id}-egress")
    )
    interval = config.bridge.spark.trigger_interval_ms
    if available_now:
        writer = writer.trigger(availableNow=True)
    elif interval:
        writer = writer.trigger(processingTime=f"{interval} milliseconds")
    return writer.start()
