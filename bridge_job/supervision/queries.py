"""The flows' Spark queries, top to bottom: the egress (journal ranges -> tasks) and the ingress.

The egress: journal ranges -> tasks (read, deduplicate, route, convert, write).

Spark does what it is for: it plans each micro-batch as journal offset ranges, checkpoints them, runs one
task per journal partition on its executors, retries and replays. The records stay inside each task's
Python process from the journal read to the Kafka write (journal_to_kafka/task.py); what reaches Spark is one
summary row per task, collected into the batch's observed metrics for telemetry. Nothing is left for a sink
to do, so the query writes to Spark's `noop` sink.

No stage shuffles: parallelism follows the journal's partitions (`kafka.journalPartitions`), and the
messages of one JMS destination, which share a journal partition, keep their order.

The ingress query (Kafka -> JMS) is built the same way over the kafkaToJms routes' topics
(kafka_to_jms/source.py, kafka_to_jms/task.py), with a checkpoint of its own: one task per topic partition,
whose order it keeps on the JMS destination.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from bridge_job.config import JobConfig
from bridge_job.journal_to_kafka.source import EgressSource
from bridge_job.kafka_to_jms.source import IngressSource
from bridge_job.supervision.telemetry import INGRESS_OBSERVATION, OBSERVATION


def register_sources(spark: SparkSession) -> None:
    spark.dataSource.register(EgressSource)
    spark.dataSource.register(IngressSource)


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
    # The checkpoint too: the source checks that it still indexes the topics it reads (spark/binding.py).
    reader = spark.readStream.format(source).option("config", config_path)
    tasks = reader.option("checkpoint", checkpoint).load()
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
