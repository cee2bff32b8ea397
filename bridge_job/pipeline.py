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

import logging
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.listener import StreamingQueryListener
from pyspark.sql.streaming.query import StreamingQuery

from bridge_job.config import JobConfig
from bridge_job.egress_source import EgressSource
from bridge_job.telemetry import OBSERVATION

log = logging.getLogger("jmsbridge.job")


def register_sources(spark: SparkSession) -> None:
    spark.dataSource.register(EgressSource)


class _Progress(StreamingQueryListener):
    def __init__(self, on_batch: Callable[[Any], None]) -> None:
        self.on_batch = on_batch

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        try:
            self.on_batch(event.progress)
        except Exception:  # telemetry must never stop the bridge
            log.warning("cannot record the figures of batch %s", event.progress.batchId, exc_info=True)

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass


def report_progress(spark: SparkSession, on_batch: Callable[[Any], None]) -> None:
    """Call `on_batch` with each micro-batch's progress as Spark reports it: once per batch, instead of
    polling `recentProgress`, which converts up to 100 past reports every time it is read."""
    spark.streams.addListener(_Progress(on_batch))


def egress_query(
    spark: SparkSession,
    config_path: str,
    config: JobConfig,
    checkpoint: str,
    available_now: bool = False,
) -> StreamingQuery:
    tasks = spark.readStream.format(EgressSource.name()).option("config", config_path).load()
    # One aggregate, the tasks' summary rows as they are: every extra aggregate expression costs Spark
    # generated code per batch, which was a quarter of its CPU when ten of them summed these few rows.
    observed = tasks.observe(OBSERVATION, F.collect_list(F.struct(*tasks.columns)).alias("tasks"))
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
