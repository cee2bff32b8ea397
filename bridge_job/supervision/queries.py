"""The flows' Spark queries, top to bottom: the egress (journal ranges -> tasks) and the ingress.

The egress: journal ranges -> tasks (read, deduplicate, route, convert, write).

In real-time mode (`spark.mode: realTime`, the default) each micro-batch is an interval of long-running
tasks that move records as they arrive (spark/intervals.py); in micro-batch mode each batch is a bounded
range per partition. What follows holds for both.

Spark does what it is for: it plans each micro-batch as journal offset ranges, checkpoints them, runs one
task per journal partition on its executors, retries and replays. The records stay inside each task's
Python process from the journal read to the Kafka write (egress/task.py); what reaches Spark is one
summary row per task, collected into the batch's observed metrics for telemetry. Nothing is left for a sink
to do, so the query writes to Spark's `noop` sink.

No stage shuffles: parallelism follows the journal's partitions (`kafka.journalPartitions`), and the
messages of one JMS destination, which share a journal partition, keep their order.

The ingress query (Kafka -> JMS) is built the same way over the kafkaToJms routes' topics
(ingress/source.py, ingress/task.py), with a checkpoint of its own: one task per topic partition,
whose order it keeps on the JMS destination.

Every flow's query is built by one function, `flow_query`, from its entry in supervision/flows.py.

A real-time query's tasks report as they run (spark/live.py): each start of a query is a run with a key of
its own, which reaches its tasks with their partitions, and the rows it may report are those it plans
(the flow's `rows`), asked when a report names one the driver does not know.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from bridge_job.config import JobConfig
from bridge_job.config.loading import WatchedConfig
from bridge_job.spark.gate import Gate
from bridge_job.spark.intervals import MICRO_BATCH, REAL_TIME, query_mode
from bridge_job.spark.live import live_option
from bridge_job.supervision.flows import FLOWS, Flow, tasks_before, tasks_of_all

log = logging.getLogger("jmsbridge.job")


def register_sources(spark: SparkSession) -> None:
    for flow in FLOWS:
        spark.dataSource.register(flow.source)


def flow_query(
    spark: SparkSession,
    flow: Flow,
    config_path: str,
    config: JobConfig,
    checkpoint: str,
    available_now: bool = False,
    gate: Gate | None = None,
    live: str = "",
) -> StreamingQuery:
    """`flow`'s query over the config at `config_path` (`config`: as it is now), checkpointed at
    `checkpoint`, held at `gate` (spark/gate.py), its tasks reporting to `live` (spark/live.py)."""
    slots = task_slots(spark) - tasks_before(flow, config)  # the flows ahead hold theirs
    tasks = flow.tasks(config)
    if flow.real_time_only:
        mode = REAL_TIME
        if tasks > slots:
            log.warning(
                "the %s query's tasks wait for task slots that the other queries hold: give the "
                "executors more cores (spark.executor.cores x instances)",
                flow.name,
            )
    else:
        mode = slotted_mode(config, available_now, tasks, slots, flow.name)
    rows = _followed(config_path, flow.rows) if flow.rows_follow_routes else lambda: flow.rows(config)
    live = _live(live, mode, flow.name, rows)
    source = flow.source.name()
    return _query(
        spark, source, flow.observation, config_path, config, checkpoint, mode, available_now, gate, live
    )


def tasks_at_once(spark: SparkSession, config: JobConfig) -> int:
    """How many tasks the bridge's queries run side by side, at most the job's task slots."""
    return min(tasks_of_all(config), task_slots(spark))


def task_slots(spark: SparkSession) -> int:
    """How many tasks the job runs at once: local[N]'s N, or its executors' cores as configured (their
    number is fixed: no dynamic allocation), whether or not they have registered yet."""
    context = spark.sparkContext
    if (context.master or "").startswith("local"):
        return int(context.defaultParallelism)
    conf = context.getConf()
    executors, cores = (
        int(conf.get("spark.executor.instances", "1")),
        int(conf.get("spark.executor.cores", "1")),
    )
    return executors * cores // max(int(conf.get("spark.task.cpus", "1")), 1)


def _followed(config_path: str, rows: Callable[[JobConfig], set[str]]) -> Callable[[], set[str]]:
    """`rows` of the config as it is when asked: routes change while a query runs."""
    watched = WatchedConfig(Path(config_path))
    return lambda: rows(watched.current())


def _live(address: str, mode: str, query: str, rows: Callable[[], set[str]]) -> str:
    """Where a real-time query's tasks report as they run, with the key of this run (spark/live.py); no
    reports in micro-batch mode."""
    return live_option(address, query, rows) if address and mode == REAL_TIME else ""


def slotted_mode(config: JobConfig, available_now: bool, tasks: int, slots: int, what: str) -> str:
    """The query's mode (spark/intervals.py), micro-batch when real-time tasks would not all fit: a task
    waiting for a slot would wait a whole interval."""
    mode = query_mode(config, available_now)
    if mode == REAL_TIME and tasks > slots:
        log.warning(
            "the %s query runs in micro-batch mode: real-time mode runs its %d tasks side by side and the "
            "job has %d task slots for them; give the executors more cores (spark.executor.cores x "
            "instances), or set spark.mode: microBatch to say so",
            what,
            tasks,
            max(slots, 0),
        )
        return MICRO_BATCH
    return mode


def _query(
    spark: SparkSession,
    source: str,
    observation: str,
    config_path: str,
    config: JobConfig,
    checkpoint: str,
    mode: str,
    available_now: bool,
    gate: Gate | None,
    live: str,
) -> StreamingQuery:
    # The checkpoint too: the source checks that it still indexes the topics it reads (spark/binding.py).
    reader = spark.readStream.format(source).option("config", config_path).option("mode", mode)
    if gate is not None:  # a warm standby's query, held until it holds the lease (spark/gate.py)
        reader = reader.option("gate", str(gate.path))
    if live:  # where the long-running tasks report as they run (spark/live.py)
        reader = reader.option("live", live)
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
    elif interval and mode == MICRO_BATCH:  # realTime: each interval begins as the last one ends
        writer = writer.trigger(processingTime=f"{interval} milliseconds")
    return writer.start()
