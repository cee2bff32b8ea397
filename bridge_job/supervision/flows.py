"""The job's flows as supervision runs them: one `Flow` each, in `FLOWS`, in the order their tasks take
the job's task slots. Supervision, the queries and the runner go through the list and name no flow:
adding one is its folder (a Spark data source and its tasks), its figures (a `FlowMetrics` in
telemetry.py's `FLOW_METRICS`) and an entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pyspark.sql.datasource import DataSource

from bridge_job.config import Direction, JobConfig
from bridge_job.egress.source import EgressSource
from bridge_job.faults.outages import OutageListener
from bridge_job.ingest.assignment import ingest_partitions, runs_on_executors
from bridge_job.ingest.source import IngestSource
from bridge_job.ingress import task as ingress_task
from bridge_job.ingress.source import IngressSource, source_partitions
from bridge_job.journal.reading import consumer_settings as journal_consumer_settings
from bridge_job.kafka.reading import new_consumer
from bridge_job.kafka.topics import partitions_of
from bridge_job.nats_service.probe import nats_probe
from bridge_job.nats_service.service import UNROUTED
from bridge_job.nats_service.source import NatsSource
from bridge_job.supervision import telemetry
from bridge_job.supervision.telemetry import FlowMetrics

ROWS_TIMEOUT = 5.0  # seconds: asking Kafka which rows a query plans holds up the driver's live reports


class Probe(Protocol):
    """A background check of a system a flow talks to, told to its listener; stopped with the job."""

    def stop(self) -> None: ...


@dataclass(frozen=True)
class Flow:
    """One Spark query of the job: what starts it, how many tasks it runs, what its reports hold."""

    metrics: type[FlowMetrics]  # its figures (supervision/telemetry.py), which give it its name
    source: type[DataSource]  # the data source its query reads (spark.readStream.format)
    checkpoint: str  # its directory inside the bridge's checkpoint; "" the bridge's own
    wanted: Callable[[JobConfig], bool]  # whether the routes ask for it now
    tasks: Callable[[JobConfig], int]  # how many tasks it runs side by side
    rows: Callable[[JobConfig], set[str]]  # the rows its real-time tasks may report (spark/live.py)
    rows_follow_routes: bool  # rows asked of the routes as they are then, not as the query started
    real_time_only: bool = False  # one long-running task per interval, in either mode
    drains: bool = True  # runs to the end under availableNow (a flow that keeps nothing has none)
    # Its health: the driver's probe of the system only it talks to (`probed`), when the routes want it.
    # (The ingest's JMS and every flow's Kafka have the runner's own.)
    probe: Callable[[JobConfig, OutageListener], Probe] | None = None
    probed: str = ""

    @property
    def name(self) -> str:
        """Its query's name, its figures' and its logs'."""
        return self.metrics.query

    @property
    def observation(self) -> str:
        """The name its tasks' summary rows are observed under in its query's progress."""
        return self.metrics.observation


def ingress_partitions(config: JobConfig) -> int:
    """The partitions of the topics the kafkaToJms routes read now."""
    consumer = new_consumer(ingress_task.consumer_settings(config))
    try:
        return len(source_partitions(consumer, config))
    finally:
        consumer.close()


def journal_rows(config: JobConfig) -> set[str]:
    """The rows an egress task may report: its journal partition, one of the journal's."""
    consumer = new_consumer(journal_consumer_settings(config))
    try:
        partitions = partitions_of(consumer, config.journal_topic, ROWS_TIMEOUT)
    finally:
        consumer.close()
    return {str(p) for p in partitions or []}


def ingress_rows(config: JobConfig) -> set[str]:
    """The rows an ingress task may report: `topic:partition` of a topic the kafkaToJms routes read."""
    consumer = new_consumer(ingress_task.consumer_settings(config))
    try:
        return {f"{topic}:{p}" for topic, p in source_partitions(consumer, config, timeout=ROWS_TIMEOUT)}
    finally:
        consumer.close()


def nats_rows(config: JobConfig) -> set[str]:
    """The rows the NATS task may report: one per route (and what no route takes any more)."""
    return {route.name for route in config.routes} | {UNROUTED}


def ingest_rows(config: JobConfig) -> set[str]:
    """The rows an ingest task may report: its ingest partition, one with sources."""
    return {
        str(p) for p in ingest_partitions(config.bridge.jms.sources, config.bridge.kafka.journal_partitions)
    }


INGEST = Flow(
    metrics=telemetry.IngestMetrics,
    source=IngestSource,
    checkpoint="ingest",  # it counts intervals only
    wanted=lambda config: runs_on_executors(),  # else the driver ingests (ingest/journalling.py `Ingest`)
    tasks=lambda config: len(ingest_rows(config)),
    rows=ingest_rows,
    rows_follow_routes=False,  # its sources are the bridge's, fixed while the job runs
    real_time_only=True,
    drains=False,  # JMS has no end to drain to; availableNow drains the journal
)
EGRESS = Flow(
    metrics=telemetry.EgressMetrics,
    source=EgressSource,
    checkpoint="",
    wanted=lambda config: True,  # every bridge journals and routes what it takes
    tasks=lambda config: config.bridge.kafka.journal_partitions,
    rows=journal_rows,
    rows_follow_routes=False,  # the journal's partitions are fixed while the job runs
)
INGRESS = Flow(
    metrics=telemetry.IngressMetrics,
    source=IngressSource,
    checkpoint="ingress",
    wanted=lambda config: bool(config.routes_for(Direction.KAFKA_TO_JMS)),
    tasks=ingress_partitions,
    rows=ingress_rows,
    rows_follow_routes=True,
)
NATS = Flow(
    metrics=telemetry.NatsMetrics,
    source=NatsSource,
    checkpoint="nats",  # it counts intervals only
    wanted=lambda config: config.uses_nats,  # jmsToNats routes too: their answers come there
    tasks=lambda config: 1,
    rows=nats_rows,
    rows_follow_routes=True,
    real_time_only=True,
    drains=False,
    probe=nats_probe,
    probed="nats",
)

FLOWS: tuple[Flow, ...] = (INGEST, EGRESS, INGRESS, NATS)


def tasks_before(flow: Flow, config: JobConfig) -> int:
    """The tasks of the flows ahead of `flow` that run now: they hold their task slots first."""
    ahead = FLOWS[: FLOWS.index(flow)]
    return sum(f.tasks(config) for f in ahead if f.wanted(config))


def tasks_of_all(config: JobConfig) -> int:
    """The tasks of every flow the routes ask for, side by side."""
    return sum(f.tasks(config) for f in FLOWS if f.wanted(config))
