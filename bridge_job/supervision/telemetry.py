"""Telemetry: what the bridge job moved, how long it took, what it is connected to and whether it leads.

Served for Prometheus on the job's metrics port (`telemetry.port`), in the Prometheus way: counters
(`_total`) of messages by outcome, histograms of latencies in seconds, gauges of lag and state (the
brokers' connections, this instance's role in the lease, the queries and their tasks). Rates and averages
are the dashboards' to compute (`rate()`, `histogram_quantile()`), over the interval they choose.

Routing runs in Spark tasks; each task's counts reach the driver in its summary row, collected into the
query's observed metrics (`observe`) and summed here from each micro-batch's progress; latencies travel as
counts per bucket (spark/latency.py). A real-time task also reports its row as it runs (spark/live.py):
those counts are taken as they come, and the interval's row adds what they did not; reports the driver
refuses (unsigned, of rows it did not plan, beyond belief: spark/live.py) change no figure and are counted
in `jmsbridge_telemetry_rejected_total`. The ingest counts in the driver directly. One JSON log line per batch
carries the batch's figures, with how many tasks ran and how much they overlapped (`parallelism`: task
time over the batch's task span; 2.0 means two tasks side by side all along).

Each flow's figures are one `FlowMetrics` (its metrics, what its tasks' rows count, what its finished
batch sets and logs), listed in `FLOW_METRICS`: the driver records any flow's batch and any live report
through `Metrics.record` and `Metrics.record_live` without naming it.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
from prometheus_client.metrics_core import GaugeMetricFamily, HistogramMetricFamily, Metric

from bridge_job.ingest.counts import IngestCounts, Journalled
from bridge_job.spark import latency
from bridge_job.spark.live import REFUSALS, STATES, LiveCounts, Refusal, Report

if TYPE_CHECKING:
    from bridge_job.kube.leadership import Leadership

log = logging.getLogger("jmsbridge.telemetry")

OBSERVATION = "routing"
INGEST_OBSERVATION = "ingest"
INGRESS_OBSERVATION = "ingress"
NATS_OBSERVATION = "nats"
# The counts of a NATS task's row (nats_service/interval.py), each a `jmsbridge_nats_messages_total` outcome.
NATS_OUTCOMES = (
    "received",
    "forwarded",
    "requests",
    "replies",
    "timeouts",
    "refused",
    "unknown_replies",
    "loops",
    "answered",
    "no_responders",
    "dead_lettered",
    "skipped",
)


@dataclass(frozen=True)
class EgressBatch:
    batch_id: int
    input_records: int
    published: int
    dead_lettered: int
    skipped: int
    latency_avg_seconds: float
    duration_seconds: float
    journal_lag: int
    duplicates: int = 0
    loops: int = 0  # messages this bridge's ingress sent, not written back to their topic
    markers: int = 0  # epoch markers: the journal's writer changed (a takeover, a restart)
    tasks: int = 0
    parallelism: float = 0.0
    phases_ms: dict[str, int] = field(default_factory=dict, compare=False)
    # Journal record written -> written to its topic, per routed record: counts per bucket, and their sum.
    latency_buckets: list[int] = field(default_factory=latency.no_latencies, compare=False)
    latency_seconds: float = field(default=0.0, compare=False)
    rows: list[Mapping[str, Any]] = field(default_factory=list, compare=False, repr=False)  # the tasks' rows

    @property
    def failures(self) -> int:
        return self.dead_lettered + self.skipped

    @property
    def throughput(self) -> float:
        return self.input_records / self.duration_seconds if self.duration_seconds > 0 else 0.0


def journal_lag(end_offset: str | None, latest_offset: str | None) -> int:
    """Records in the journal not yet routed: latest minus end, summed over partitions."""
    end = json.loads(end_offset) if end_offset else None
    latest = json.loads(latest_offset) if latest_offset else None  # "null" before the first batch
    if not isinstance(end, Mapping) or not isinstance(latest, Mapping):
        return 0
    return sum(max(int(latest[p]) - int(end.get(p, 0)), 0) for p in latest)


def task_rows(progress: Any, observation: str) -> list[dict[str, Any]]:
    """The tasks' summary rows of a batch, as PySpark parses them from the progress JSON: dicts."""
    observed = (progress.observedMetrics or {}).get(observation)
    return (observed["tasks"] if observed is not None else None) or []


def summed(rows: Sequence[Mapping[str, Any]], name: str) -> int:
    """A count over the tasks' rows (0 where a row has none)."""
    return sum(int(row.get(name) or 0) for row in rows)


def egress_batch(tasks: Sequence[Mapping[str, Any]]) -> EgressBatch:
    """The egress tasks' rows (or what live reports added to them) summed up, as a batch of no batch."""

    total = functools.partial(summed, tasks)

    routed = total("published") + total("dead_lettered") + total("skipped")
    task_ms = total("ended_ms") - total("started_ms")
    span_ms = max((t.get("ended_ms") or 0 for t in tasks), default=0) - min(
        (t.get("started_ms") or 0 for t in tasks), default=0
    )
    return EgressBatch(
        batch_id=0,
        input_records=total("records"),
        published=total("published"),
        dead_lettered=total("dead_lettered"),
        skipped=total("skipped"),
        latency_avg_seconds=(total("routing_ns") / routed / 1e9) if routed else 0.0,
        duration_seconds=0.0,
        journal_lag=0,
        duplicates=total("duplicates"),
        loops=total("loops"),
        markers=total("markers"),
        tasks=len(tasks),
        parallelism=round(task_ms / max(span_ms, 1), 2),
        latency_buckets=buckets_of(tasks, "latency_buckets"),
        latency_seconds=total("latency_ms") / 1000,
        rows=list(tasks),
    )


def batch_fields(progress: Any) -> dict[str, Any]:
    """What every flow's figures take of a batch's progress report: its id and how long it took."""
    return {"batch_id": int(progress.batchId), "duration_seconds": (progress.batchDuration or 0) / 1000.0}


def egress_progress(progress: Any) -> EgressBatch:
    source = progress.sources[0] if progress.sources else None
    return dataclasses.replace(
        egress_batch(task_rows(progress, OBSERVATION)),
        **batch_fields(progress),
        journal_lag=journal_lag(source.endOffset, source.latestOffset) if source is not None else 0,
        phases_ms=dict(progress.durationMs or {}),
    )


def buckets_of(rows: Sequence[Mapping[str, Any]], column: str) -> list[int]:
    """The latency counts of several rows together (spark/latency.py)."""
    summed = latency.no_latencies()
    for row in rows:
        summed = latency.added(summed, row.get(column))
    return summed


@dataclass(frozen=True)
class IngressBatch:
    batch_id: int
    records: int
    sent: int
    dead_lettered: int
    skipped: int
    loops: int
    latency_avg_seconds: float  # record timestamp -> JMS commit
    latency_max_seconds: float
    duration_seconds: float
    lag: dict[str, int] = field(default_factory=dict)  # records not yet sent, by `topic:partition`
    tasks: int = 0
    retries: int = 0  # sends of a range after a JMS failure
    latency_buckets: list[int] = field(default_factory=latency.no_latencies, compare=False)  # per record
    rows: list[Mapping[str, Any]] = field(default_factory=list, compare=False, repr=False)  # the tasks' rows


def partition_lag(end_offset: str | None, latest_offset: str | None) -> dict[str, int]:
    end = json.loads(end_offset) if end_offset else None
    latest = json.loads(latest_offset) if latest_offset else None
    if not isinstance(end, Mapping) or not isinstance(latest, Mapping):
        return {}
    return {p: max(int(latest[p]) - int(end.get(p, latest[p])), 0) for p in latest}


def ingress_batch(tasks: Sequence[Mapping[str, Any]]) -> IngressBatch:
    """The ingress tasks' rows (or what live reports added to them) summed up, as a batch of no batch."""

    total = functools.partial(summed, tasks)

    sent = total("sent")
    return IngressBatch(
        batch_id=0,
        records=total("records"),
        sent=sent,
        dead_lettered=total("dead_lettered"),
        skipped=total("skipped"),
        loops=total("loops"),
        latency_avg_seconds=total("latency_ms") / sent / 1000 if sent else 0.0,
        latency_max_seconds=max((int(t.get("max_latency_ms") or 0) for t in tasks), default=0) / 1000,
        duration_seconds=0.0,
        tasks=len(tasks),
        retries=total("retries"),
        latency_buckets=buckets_of(tasks, "latency_buckets"),
        rows=list(tasks),
    )


def ingress_progress(progress: Any) -> IngressBatch:
    source = progress.sources[0] if progress.sources else None
    return dataclasses.replace(
        ingress_batch(task_rows(progress, INGRESS_OBSERVATION)),
        **batch_fields(progress),
        lag=partition_lag(source.endOffset, source.latestOffset) if source is not None else {},
    )


class LatencyHistogram:
    """A Prometheus histogram (seconds, `latency.BOUNDS`) fed with counts per bucket and their sum, as the
    tasks' rows bring them, rather than one observation at a time."""

    def __init__(self, name: str, documentation: str, labels: Sequence[str], registry: CollectorRegistry):
        self.name = name
        self.documentation = documentation
        self.labels = list(labels)
        self._lock = threading.Lock()
        self._series: dict[tuple[str, ...], tuple[list[int], float]] = {}
        registry.register(self)

    def add(self, labels: Sequence[str], buckets: Sequence[int], total_seconds: float) -> None:
        key = tuple(labels)
        with self._lock:
            counts, total = self._series.get(key, (latency.no_latencies(), 0.0))
            self._series[key] = (latency.added(counts, list(buckets)), total + total_seconds)

    def describe(self) -> Iterator[Metric]:
        yield HistogramMetricFamily(self.name, self.documentation, labels=self.labels)

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labels)
        with self._lock:
            series = sorted(self._series.items())
        for labels, (counts, total) in series:
            cumulative = list(itertools.accumulate(counts))
            bounds = [str(bound) for bound in latency.BOUNDS] + ["+Inf"]  # as Prometheus writes `le`
            family.add_metric(list(labels), list(zip(bounds, cumulative, strict=True)), total)
        yield family


Row = Mapping[str, Any]


class Series:
    """How the job's metrics are made: in its registry, each labelled by the bridge first."""

    def __init__(self, bridge_id: str, registry: CollectorRegistry) -> None:
        self.bridge_id = bridge_id
        self.registry = registry

    def gauge(self, name: str, doc: str, extra: tuple[str, ...] = ()) -> Gauge:
        return Gauge(name, doc, ["bridge", *extra], registry=self.registry)

    def counter(self, name: str, doc: str, extra: tuple[str, ...] = ()) -> Counter:
        return Counter(name, doc, ["bridge", *extra], registry=self.registry)

    def histogram(self, name: str, doc: str, extra: tuple[str, ...] = ()) -> LatencyHistogram:
        return LatencyHistogram(name, doc, ["bridge", *extra], self.registry)


class FlowMetrics(ABC):
    """One flow's figures, under its query's name: its metrics, what its tasks' rows add to them, and what
    a finished batch (interval) sets and logs. A row is counted once, whether a real-time task's live
    report brought it or the batch's end did (`Metrics.record`, spark/live.py). Each flow has one, in
    `FLOW_METRICS`."""

    query: ClassVar[str]
    observation: ClassVar[str]  # the name its tasks' summary rows are observed under in a batch's progress

    def __init__(self, series: Series) -> None:
        self.bridge_id = series.bridge_id

    @abstractmethod
    def count(self, rows: Sequence[Row]) -> None:
        """What the rows (or the part of them not counted yet) add to the counters."""

    @abstractmethod
    def finished(self, progress: Any, rows: Sequence[Row], live_lag: bool) -> int:
        """A finished batch: its gauges (the lag, unless `live_lag` reads it live) and its log line; how
        many tasks it ran."""


class EgressMetrics(FlowMetrics):
    """The journal to Kafka and NATS."""

    query = "egress"
    observation = OBSERVATION

    def __init__(self, series: Series) -> None:
        super().__init__(series)
        self.journal_records = series.counter("jmsbridge_journal_records_read_total", "Journal records read")
        self.routed = series.counter("jmsbridge_routed_messages_total", "Messages by outcome", ("outcome",))
        self.latency = series.histogram(
            "jmsbridge_egress_latency_seconds",
            "Journal record written -> written to its topic (or NATS subject), per routed record",
        )
        self.routing_time = series.counter(
            "jmsbridge_routing_seconds_total", "Time spent routing and converting messages (egress tasks)"
        )
        self.lag = series.gauge("jmsbridge_journal_lag_records", "Journal records not yet routed")
        self.duplicates = series.counter(
            "jmsbridge_redelivered_duplicates_total",
            "Redelivered JMS messages dropped (already in the journal)",
        )
        self.batches = series.counter(
            "jmsbridge_batches_total", "Egress micro-batches (or intervals) completed"
        )
        self.epochs = series.counter(
            "jmsbridge_journal_epoch_markers_total",
            "Epoch markers met in the journal: its writer changed (a takeover, a restart)",
        )

    def count(self, rows: Sequence[Row]) -> None:
        figures, b = egress_batch(rows), self.bridge_id
        self.journal_records.labels(b).inc(figures.input_records)
        for outcome, count in (
            ("published", figures.published),
            ("deadLettered", figures.dead_lettered),
            ("skipped", figures.skipped),
            ("loop", figures.loops),
        ):
            self.routed.labels(b, outcome).inc(count)
        routed = figures.published + figures.failures
        self.routing_time.labels(b).inc(figures.latency_avg_seconds * routed)
        self.latency.add([b], figures.latency_buckets, figures.latency_seconds)
        self.duplicates.labels(b).inc(figures.duplicates)
        self.epochs.labels(b).inc(figures.markers)

    def finished(self, progress: Any, rows: Sequence[Row], live_lag: bool) -> int:
        figures = egress_progress(progress)
        if not live_lag:
            self.lag.labels(self.bridge_id).set(figures.journal_lag)
        self.batches.labels(self.bridge_id).inc()
        if figures.input_records:
            without_rows = dataclasses.replace(figures, rows=[])  # the rows are not copied to be dropped
            logged = asdict(without_rows) | {"throughput": round(figures.throughput, 1)}
            del logged["latency_buckets"], logged["latency_seconds"], logged["rows"]
            log.info("batch %s", json.dumps(logged))
        return figures.tasks


class IngressMetrics(FlowMetrics):
    """Kafka to JMS."""

    query = "ingress"
    observation = INGRESS_OBSERVATION

    def __init__(self, series: Series) -> None:
        super().__init__(series)
        self.records = series.counter(
            "jmsbridge_ingress_records_total", "Kafka records by outcome (kafkaToJms)", ("outcome",)
        )
        self.latency = series.histogram(
            "jmsbridge_ingress_latency_seconds", "Kafka record timestamp -> JMS commit, per sent record"
        )
        self.lag = series.gauge(
            "jmsbridge_ingress_lag_records",
            "Records of a kafkaToJms topic partition not yet sent",
            ("topic", "partition"),
        )
        self.retries = series.counter(
            "jmsbridge_ingress_retries_total", "Ranges sent again after a JMS failure"
        )

    def count(self, rows: Sequence[Row]) -> None:
        figures, b = ingress_batch(rows), self.bridge_id
        for outcome, count in (
            ("sent", figures.sent),
            ("deadLettered", figures.dead_lettered),
            ("skipped", figures.skipped),
            ("loop", figures.loops),
        ):
            self.records.labels(b, outcome).inc(count)
        self.retries.labels(b).inc(figures.retries)
        self.latency.add([b], figures.latency_buckets, figures.latency_avg_seconds * figures.sent)

    def set_lag(self, lag: Mapping[tuple[str, int], int]) -> None:
        for (topic, partition), records in lag.items():
            self.lag.labels(self.bridge_id, topic, str(partition)).set(records)

    def finished(self, progress: Any, rows: Sequence[Row], live_lag: bool) -> int:
        figures = ingress_progress(progress)
        for where, lag in figures.lag.items() if not live_lag else ():
            topic, _, partition = where.rpartition(":")
            self.lag.labels(self.bridge_id, topic, partition).set(lag)
        if figures.records:
            logged = asdict(dataclasses.replace(figures, rows=[]))  # the rows are not copied to be dropped
            del logged["latency_buckets"], logged["rows"]
            log.info("ingress batch %s", json.dumps(logged))
        return figures.tasks


class NatsMetrics(FlowMetrics):
    """NATS to JMS, and the answers of jmsToNats requests: a row per route."""

    query = "nats"
    observation = NATS_OBSERVATION

    def __init__(self, series: Series) -> None:
        super().__init__(series)
        self.messages = series.counter(
            "jmsbridge_nats_messages_total",
            "NATS messages by route and outcome (natsToJms: received, forwarded, requests, replies, "
            "timeouts, refused, unknown_replies, loops; jmsToNats: answered, no_responders; dead_lettered, "
            "skipped)",
            ("route", "outcome"),
        )
        self.round_trip = series.histogram(
            "jmsbridge_nats_round_trip_seconds",
            "NATS request taken -> JMS answer published to the requester, per reply",
            ("route",),
        )

    def count(self, rows: Sequence[Row]) -> None:
        for row in rows:
            route = str(row["route"])
            for outcome in NATS_OUTCOMES:
                self.messages.labels(self.bridge_id, route, outcome).inc(int(row.get(outcome) or 0))
            took = int(row.get("round_trip_ms") or 0) / 1000
            self.round_trip.add([self.bridge_id, route], buckets_of([row], "round_trip_buckets"), took)

    def finished(self, progress: Any, rows: Sequence[Row], live_lag: bool) -> int:
        for row in rows:
            if int(row["received"] or 0) or int(row["timeouts"] or 0) or int(row["unknown_replies"] or 0):
                log.info("nats interval %s", json.dumps({k: row[k] for k in ("route", *NATS_OUTCOMES)}))
        return 1 if rows else 0  # one task, a row per route


class IngestMetrics(FlowMetrics):
    """JMS to the journal: a row per ingest partition (ingest/counts.py), from the ingest's tasks, or from
    each batch when the ingest runs in the driver (`Metrics.record_ingest`)."""

    query = "ingest"
    observation = INGEST_OBSERVATION

    def __init__(self, series: Series) -> None:
        super().__init__(series)
        self.ingested = series.counter(
            "jmsbridge_ingested_messages_total", "JMS messages written to the journal"
        )
        self.poison = series.counter(
            "jmsbridge_ingest_poison_messages_total",
            "JMS messages that cannot become journal records, by outcome (deadLettered, skipped)",
            ("outcome",),
        )
        self.latency = series.histogram(
            "jmsbridge_ingest_latency_seconds",
            "JMS message's JMSTimestamp -> its journal transaction committed (messages with a timestamp)",
        )
        self.rows_heard: list[Callable[[Row], None]] = []  # who else reads the tasks' rows (ingest/health.py)

    def count(self, rows: Sequence[Row]) -> None:
        b = self.bridge_id
        for row in rows:
            for heard in self.rows_heard:
                heard(row)
            self.ingested.labels(b).inc(int(row.get("journalled") or 0))
            self.poison.labels(b, "deadLettered").inc(int(row.get("dead_lettered") or 0))
            self.poison.labels(b, "skipped").inc(int(row.get("skipped") or 0))
            took = int(row.get("latency_ms") or 0) / 1000
            self.latency.add([b], buckets_of([row], "latency_buckets"), took)

    def finished(self, progress: Any, rows: Sequence[Row], live_lag: bool) -> int:
        for row in rows:
            if int(row["fenced"] or 0):
                log.info("ingest partition %s: another instance took the journal over", row["partition"])
        return len(rows)


FLOW_METRICS: tuple[type[FlowMetrics], ...] = (IngestMetrics, EgressMetrics, IngressMetrics, NatsMetrics)


class Role:
    """This instance's part, read when Prometheus asks: active (holding the lease, or running without a
    standby) or not, and the lease's transitions as this instance last saw them (a takeover adds one)."""

    def __init__(self, bridge_id: str, registry: CollectorRegistry) -> None:
        self.bridge_id = bridge_id
        self.instance = ""
        self.leadership: Leadership | None = None
        self.running = False  # without a lease: from the start of the ingest and the queries
        registry.register(self)

    def describe(self) -> Iterator[Metric]:
        return self.collect()

    def collect(self) -> Iterator[Metric]:
        active = GaugeMetricFamily(
            "jmsbridge_active",
            "1 while this instance runs the ingest and the queries (holds the lease, or runs without a "
            "standby), 0 while it stands by or starts",
            labels=["bridge", "bridge_instance"],
        )
        transitions = GaugeMetricFamily(
            "jmsbridge_lease_transitions",
            "The lease's leaseTransitions as this instance last saw it: a takeover adds one",
            labels=["bridge"],
        )
        leadership = self.leadership
        if self.instance:
            leading = leadership.is_leader if leadership is not None else self.running
            active.add_metric([self.bridge_id, self.instance], 1.0 if leading else 0.0)
        if leadership is not None and leadership.transitions is not None:
            transitions.add_metric([self.bridge_id], float(leadership.transitions))
        yield active
        yield transitions


class TaskStates:
    """Each running real-time task's state as it last reported it (spark/live.py), read when Prometheus
    asks: one series per state, 1 for the task's."""

    def __init__(self, bridge_id: str, live: LiveCounts, registry: CollectorRegistry) -> None:
        self.bridge_id = bridge_id
        self.live = live
        registry.register(self)

    def describe(self) -> Iterator[Metric]:
        return self.collect()

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "jmsbridge_task_state",
            "A running real-time task's state: moving (records moved in its last second), idle (caught "
            "up) or waiting (an outage); its task is its partition (topic:partition) or NATS route",
            labels=["bridge", "query", "task", "state"],
        )
        for (query, task), now in sorted(self.live.states().items()):
            for state in STATES:
                family.add_metric([self.bridge_id, query, task, state], 1.0 if state == now else 0.0)
        yield family


class Metrics:
    """Prometheus metrics of one bridge job, in their own registry."""

    def __init__(self, bridge_id: str) -> None:
        self.registry = registry = CollectorRegistry()
        self.bridge_id = bridge_id
        self.served = False
        self._server: tuple[Any, threading.Thread]
        series = Series(bridge_id, registry)
        gauge, counter = series.gauge, series.counter

        self.flows = {f.query: f(series) for f in FLOW_METRICS}  # each flow's own figures
        self.records_lost = counter(
            "jmsbridge_records_lost_total",
            "Records that left a topic before the bridge read them, skipped (spark.onDataLoss: skip)",
            ("topic",),
        )
        # State
        self.connected = gauge(
            "jmsbridge_connected",
            "1 while the job reaches the system (jms, kafka, nats, schemaRegistry), 0 during an outage",
            ("system",),
        )
        self.role = Role(bridge_id, registry)
        self.query_active = gauge(
            "jmsbridge_query_active", "1 while the query (egress, ingress, nats) runs", ("query",)
        )
        self.query_tasks = gauge(
            "jmsbridge_query_tasks", "Tasks of the query's last micro-batch or interval", ("query",)
        )
        self.query_progress = gauge(
            "jmsbridge_query_last_progress_timestamp_seconds",
            "When the query last finished a micro-batch or interval (Unix time)",
            ("query",),
        )
        self.live = LiveCounts()  # what the running tasks' reports counted (spark/live.py)
        self.task_state = TaskStates(bridge_id, self.live, registry)
        self.rejected = counter(
            "jmsbridge_telemetry_rejected_total",
            "Task reports (live figures) the driver refused, by reason: oversized, unsigned (no MAC of a "
            "current query run), malformed, unknown (no row the query planned), ended (of a task that "
            "ended), replayed, lowered (a count lower than before), excessive (beyond what a task does)",
            ("reason",),
        )
        for reason in REFUSALS:  # every reason from the start: a refusal adds no series
            self.rejected.labels(bridge_id, reason)

    live_lag = False  # real-time mode: the lag gauges are read live (supervision/lag.py), not per batch

    def set_journal_lag(self, records: int) -> None:
        egress = self.flows[EgressMetrics.query]
        assert isinstance(egress, EgressMetrics)
        egress.lag.labels(self.bridge_id).set(records)

    def set_ingress_lag(self, lag: Mapping[tuple[str, int], int]) -> None:
        ingress = self.flows[IngressMetrics.query]
        assert isinstance(ingress, IngressMetrics)
        ingress.set_lag(lag)

    def serve(self, port: int, address: str = "0.0.0.0") -> None:
        """`/metrics` on `port` (0: not served), until `stop()` or the process ends."""
        if port:
            self._server = start_http_server(port, addr=address, registry=self.registry)
            self.served = True
            log.info("metrics served at http://%s:%d/metrics", address, self._server[0].server_port)

    def stop(self) -> None:
        if self.served:
            server, thread = self._server
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)

    def connection(self, system: str) -> Callable[[bool], None]:
        """What sets `jmsbridge_connected` for one system (kube/health.py's ConnectionHealth calls it)."""
        return lambda up: self.connected.labels(self.bridge_id, system).set(1 if up else 0)

    def follow_role(self, instance: str, leadership: Leadership | None) -> None:
        self.role.instance = instance
        self.role.leadership = leadership

    def running(self) -> None:
        """The ingest and the queries run: active, for a job without a lease (with one, the lease says)."""
        self.role.running = True

    def record_queries(self, kinds: Sequence[str], active: Sequence[bool]) -> None:
        for kind, running in zip(kinds, active, strict=True):
            self.query_active.labels(self.bridge_id, kind).set(1 if running else 0)
            if not running:
                self.live.forget(kind)  # its tasks ended with it

    def _progressed(self, query: str, tasks: int) -> None:
        self.query_tasks.labels(self.bridge_id, query).set(tasks)
        self.query_progress.labels(self.bridge_id, query).set(time.time())

    def record_live(self, heard: Report | Refusal) -> None:
        """A running task's row as it stands (spark/live.py): what it adds to what was counted of it; or
        a report the driver refused, counted by reason."""
        if isinstance(heard, str):
            self.rejected.labels(self.bridge_id, heard).inc()
            return
        added = self.live.report(heard)
        if isinstance(added, str):
            self.rejected.labels(self.bridge_id, added).inc()
        elif (flow := self.flows.get(heard.query)) is not None:
            flow.count([added])

    def record(self, query: str, progress: Any) -> None:
        """A finished batch (interval) of a flow's query: its rows' counts, less what its tasks' live
        reports counted already; its gauges and log line."""
        flow = self.flows[query]
        rows = task_rows(progress, flow.observation)
        flow.count(self.live.finish(query, rows))
        self._progressed(query, flow.finished(progress, rows, self.live_lag))

    def record_lost(self, topic: str, records: int) -> None:
        self.records_lost.labels(self.bridge_id, topic).inc(records)

    def hear_ingest_rows(self, heard: Callable[[Row], None]) -> None:
        """`heard` is told each ingest row as it comes (live, then at its interval's end)."""
        ingest = self.flows[IngestMetrics.query]
        assert isinstance(ingest, IngestMetrics)
        ingest.rows_heard.append(heard)

    def record_ingest(self, batch: Journalled) -> None:
        """A batch of JMS messages journalled (or dead-lettered, or skipped) and committed by the driver."""
        self.flows[IngestMetrics.query].count([IngestCounts.of(batch).row(0)])
