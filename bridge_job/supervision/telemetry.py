"""Telemetry: routing rates and latency, throughput and journal lag, for Prometheus and the log.

Routing runs in Spark tasks; each task's counts reach the driver in its summary row, collected into the
query's observed metrics (`observe`) and summed here from each micro-batch's progress. The ingest counts in
the driver directly. One JSON log line per batch carries the same figures, with how many tasks ran and how
much they overlapped (`parallelism`: task time over the batch's task span; 2.0 means two tasks side by
side all along).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

log = logging.getLogger("jmsbridge.telemetry")

OBSERVATION = "routing"
INGRESS_OBSERVATION = "ingress"
NATS_OBSERVATION = "nats"
# The counts of a NATS task's row (nats_to_jms/interval.py), each a `jmsbridge_nats_messages` outcome.
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
class BatchFigures:
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


def figures_from_progress(progress: Any) -> BatchFigures:
    observed = (progress.observedMetrics or {}).get(OBSERVATION)
    # The tasks' summary rows, as PySpark parses them from the progress JSON: dicts.
    tasks: list[dict[str, Any]] = (observed["tasks"] if observed is not None else None) or []

    def total(name: str) -> int:
        return sum(int(task[name] or 0) for task in tasks)

    routed = total("published") + total("dead_lettered") + total("skipped")
    task_ms = total("ended_ms") - total("started_ms")
    span_ms = max((t["ended_ms"] for t in tasks), default=0) - min(
        (t["started_ms"] for t in tasks), default=0
    )
    source = progress.sources[0] if progress.sources else None
    return BatchFigures(
        batch_id=int(progress.batchId),
        input_records=total("records"),
        published=total("published"),
        dead_lettered=total("dead_lettered"),
        skipped=total("skipped"),
        latency_avg_seconds=(total("routing_ns") / routed / 1e9) if routed else 0.0,
        duration_seconds=float((progress.batchDuration or 0) / 1000.0),
        journal_lag=journal_lag(source.endOffset, source.latestOffset) if source is not None else 0,
        duplicates=total("duplicates"),
        loops=total("loops"),
        markers=total("markers"),
        tasks=len(tasks),
        parallelism=round(task_ms / max(span_ms, 1), 2),
        phases_ms=dict(progress.durationMs or {}),
    )


@dataclass(frozen=True)
class IngressFigures:
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


def partition_lag(end_offset: str | None, latest_offset: str | None) -> dict[str, int]:
    end = json.loads(end_offset) if end_offset else None
    latest = json.loads(latest_offset) if latest_offset else None
    if not isinstance(end, Mapping) or not isinstance(latest, Mapping):
        return {}
    return {p: max(int(latest[p]) - int(end.get(p, latest[p])), 0) for p in latest}


def ingress_figures(progress: Any) -> IngressFigures:
    observed = (progress.observedMetrics or {}).get(INGRESS_OBSERVATION)
    tasks: list[dict[str, Any]] = (observed["tasks"] if observed is not None else None) or []

    def total(name: str) -> int:
        return sum(int(task[name] or 0) for task in tasks)

    sent = total("sent")
    source = progress.sources[0] if progress.sources else None
    return IngressFigures(
        batch_id=int(progress.batchId),
        records=total("records"),
        sent=sent,
        dead_lettered=total("dead_lettered"),
        skipped=total("skipped"),
        loops=total("loops"),
        latency_avg_seconds=total("latency_ms") / sent / 1000 if sent else 0.0,
        latency_max_seconds=max((int(t["max_latency_ms"] or 0) for t in tasks), default=0) / 1000,
        duration_seconds=float((progress.batchDuration or 0) / 1000.0),
        lag=partition_lag(source.endOffset, source.latestOffset) if source is not None else {},
        tasks=len(tasks),
        retries=sum(max(int(t["attempts"] or 0) - 1, 0) for t in tasks),
    )


class Metrics:
    """Prometheus metrics of one bridge job, in their own registry."""

    def __init__(self, bridge_id: str) -> None:
        self.registry = CollectorRegistry()
        labels = ["bridge"]
        self.bridge_id = bridge_id

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, labels, registry=self.registry)

        def counter(name: str, doc: str, extra: tuple[str, ...] = ()) -> Counter:
            return Counter(name, doc, [*labels, *extra], registry=self.registry)

        self.routing_latency_avg = gauge(
            "jmsbridge_routing_latency_avg_seconds", "Average time to route and convert a message"
        )
        self.routing_success_rate = gauge(
            "jmsbridge_routing_success_rate", "Messages routed to their topic per second (last batch)"
        )
        self.routing_failure_rate = gauge(
            "jmsbridge_routing_failure_rate", "Messages dead-lettered or skipped per second (last batch)"
        )
        self.routed = counter("jmsbridge_routed_messages", "Messages by outcome", ("outcome",))
        self.throughput = gauge("jmsbridge_throughput_messages_per_second", "Journal records per second")
        self.journal_lag = gauge("jmsbridge_journal_lag_records", "Journal records not yet routed")
        self.ingested = counter("jmsbridge_ingested_messages", "JMS messages written to the journal")
        self.duplicates = counter(
            "jmsbridge_redelivered_duplicates", "Redelivered JMS messages dropped (already in the journal)"
        )
        self.batches = counter("jmsbridge_batches", "Micro-batches completed")
        self.epochs = counter(
            "jmsbridge_journal_epoch_markers",
            "Epoch markers met in the journal: its writer changed (a takeover, a restart)",
        )
        self.ingress = counter(
            "jmsbridge_ingress_records", "Kafka records by outcome (kafkaToJms)", ("outcome",)
        )
        self.ingress_latency_avg = gauge(
            "jmsbridge_ingress_latency_avg_seconds", "Kafka record timestamp to JMS commit (last batch)"
        )
        self.ingress_latency_max = gauge(
            "jmsbridge_ingress_latency_max_seconds",
            "Kafka record timestamp to JMS commit, worst (last batch)",
        )
        self.ingress_lag = Gauge(
            "jmsbridge_ingress_lag_records",
            "Records of a kafkaToJms topic partition not yet sent",
            [*labels, "topic", "partition"],
            registry=self.registry,
        )
        self.ingress_retries = counter("jmsbridge_ingress_retries", "Ranges sent again after a JMS failure")
        self.nats = counter(
            "jmsbridge_nats_messages",
            "NATS messages by route and outcome (natsToJms: received, forwarded, requests, replies, "
            "timeouts, refused, unknown_replies, loops; jmsToNats: answered, no_responders; dead_lettered, "
            "skipped)",
            ("route", "outcome"),
        )
        self.nats_round_trip_avg = Gauge(
            "jmsbridge_nats_round_trip_avg_seconds",
            "NATS request taken -> JMS answer published, average over the last interval",
            [*labels, "route"],
            registry=self.registry,
        )
        self.nats_round_trip_max = Gauge(
            "jmsbridge_nats_round_trip_max_seconds",
            "NATS request taken -> JMS answer published, worst of the last interval",
            [*labels, "route"],
            registry=self.registry,
        )
        self.records_lost = counter(
            "jmsbridge_records_lost",
            "Records that left a topic before the bridge read them, skipped (spark.onDataLoss: skip)",
            ("topic",),
        )

    live_lag = False  # real-time mode: the lag gauges are read live (supervision/lag.py), not per batch

    def set_journal_lag(self, records: int) -> None:
        self.journal_lag.labels(self.bridge_id).set(records)

    def set_ingress_lag(self, lag: Mapping[tuple[str, int], int]) -> None:
        for (topic, partition), records in lag.items():
            self.ingress_lag.labels(self.bridge_id, topic, str(partition)).set(records)

    def serve(self, port: int) -> None:
        if port:
            start_http_server(port, addr="0.0.0.0", registry=self.registry)

    def record_batch(self, figures: BatchFigures) -> None:
        b = self.bridge_id
        seconds = figures.duration_seconds or 1.0
        self.routing_latency_avg.labels(b).set(figures.latency_avg_seconds)
        self.routing_success_rate.labels(b).set(figures.published / seconds)
        self.routing_failure_rate.labels(b).set(figures.failures / seconds)
        self.routed.labels(b, "published").inc(figures.published)
        self.routed.labels(b, "deadLettered").inc(figures.dead_lettered)
        self.routed.labels(b, "skipped").inc(figures.skipped)
        self.routed.labels(b, "loop").inc(figures.loops)
        self.duplicates.labels(b).inc(figures.duplicates)
        self.epochs.labels(b).inc(figures.markers)
        self.throughput.labels(b).set(figures.throughput)
        if not self.live_lag:
            self.journal_lag.labels(b).set(figures.journal_lag)
        self.batches.labels(b).inc()
        if figures.input_records:
            log.info("batch %s", json.dumps(asdict(figures) | {"throughput": round(figures.throughput, 1)}))

    def record_ingress_batch(self, figures: IngressFigures) -> None:
        b = self.bridge_id
        for outcome, count in (
            ("sent", figures.sent),
            ("deadLettered", figures.dead_lettered),
            ("skipped", figures.skipped),
            ("loop", figures.loops),
        ):
            self.ingress.labels(b, outcome).inc(count)
        self.ingress_retries.labels(b).inc(figures.retries)
        if figures.sent:
            self.ingress_latency_avg.labels(b).set(figures.latency_avg_seconds)
            self.ingress_latency_max.labels(b).set(figures.latency_max_seconds)
        for where, lag in figures.lag.items() if not self.live_lag else ():
            topic, _, partition = where.rpartition(":")
            self.ingress_lag.labels(b, topic, partition).set(lag)
        if figures.records:
            log.info("ingress batch %s", json.dumps(asdict(figures)))

    def record_nats_interval(self, progress: Any) -> None:
        """The rows of a NATS task (one per route) of a finished interval."""
        observed = (progress.observedMetrics or {}).get(NATS_OBSERVATION)
        rows: list[dict[str, Any]] = (observed["tasks"] if observed is not None else None) or []
        for row in rows:
            route = str(row["route"])
            for outcome in NATS_OUTCOMES:
                self.nats.labels(self.bridge_id, route, outcome).inc(int(row[outcome] or 0))
            replies = int(row["replies"] or 0)
            if replies:
                average = int(row["round_trip_ms"] or 0) / replies / 1000
                self.nats_round_trip_avg.labels(self.bridge_id, route).set(average)
                worst = int(row["max_round_trip_ms"] or 0) / 1000
                self.nats_round_trip_max.labels(self.bridge_id, route).set(worst)
            if int(row["received"] or 0) or int(row["timeouts"] or 0) or int(row["unknown_replies"] or 0):
                log.info("nats interval %s", json.dumps({k: row[k] for k in ("route", *NATS_OUTCOMES)}))

    def record_lost(self, topic: str, records: int) -> None:
        self.records_lost.labels(self.bridge_id, topic).inc(records)

    def record_ingest(self, messages: int) -> None:
        self.ingested.labels(self.bridge_id).inc(messages)
