"""The egress query, top to bottom: journal -> drop redeliveries -> route and convert -> Kafka.

Duplicates come from JMS redelivery after a crash between the journal write and the JMS commit; they
carry the same JMSMessageID and are dropped within a bounded window (`spark.dedupWindowSeconds`, kept
in the checkpointed state store). The query runs with one shuffle partition so that messages of one
JMS destination keep their order from the journal to their topic.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from bridge_job.config import JobConfig
from bridge_job.converting import Action
from bridge_job.egress_stage import SCHEMA as ROUTED_SCHEMA
from bridge_job.egress_stage import route_batches
from bridge_job.journal_source import JournalSource
from bridge_job.kafka_sink import KafkaSink
from bridge_job.telemetry import OBSERVATION


def register_sources(spark: SparkSession) -> None:
    spark.dataSource.register(JournalSource)
    spark.dataSource.register(KafkaSink)


def _count(action: Action) -> Column:
    return F.count(F.when(F.col("action") == action.value, 1))


def routed_messages(spark: SparkSession, config_path: str, config: JobConfig) -> DataFrame:
    journal = spark.readStream.format("jmsbridge-journal").option("config", config_path).load()
    window = f"{config.bridge.spark.dedup_window_seconds} seconds"
    # A message without a JMSMessageID (the producer disabled ids) is unique by its journal position.
    keyed = journal.withColumn(
        "message_id", F.coalesce("message_id", F.format_string("journal:%d:%d", "partition", "offset"))
    )
    unique = keyed.withWatermark("timestamp", window).dropDuplicatesWithinWatermark(["message_id"])
    routed = unique.mapInArrow(route_batches(config_path), ROUTED_SCHEMA)
    return routed.observe(
        OBSERVATION,
        _count(Action.PUBLISH).alias("published"),
        _count(Action.DEAD_LETTER).alias("dead_lettered"),
        _count(Action.SKIP).alias("skipped"),
        F.count(F.lit(1)).alias("routed"),
        F.coalesce(F.sum("latency_ns"), F.lit(0)).alias("latency_ns"),
    )


def egress_query(
    spark: SparkSession,
    config_path: str,
    config: JobConfig,
    checkpoint: str,
    available_now: bool = False,
) -> StreamingQuery:
    routed = routed_messages(spark, config_path, config)
    outgoing = routed.where(F.col("action").isin(Action.PUBLISH.value, Action.DEAD_LETTER.value))
    writer = (
        outgoing.select("topic", "key", "value", "headers")
        .writeStream.format("jmsbridge-kafka")
        .option("config", config_path)
        .option("checkpointLocation", checkpoint)
        .queryName(f"jmsbridge-{config.bridge_id}-egress")
    )
    interval = config.bridge.spark.trigger_interval_ms
    if available_now:
        writer = writer.trigger(availableNow=True)
    elif interval:
        writer = writer.trigger(processingTime=f"{interval} milliseconds")
    return writer.start()
