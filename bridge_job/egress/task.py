"""One egress task: a journal partition's offset range, from journal read to Kafka write, in one process.

Spark plans the ranges, checkpoints them and schedules one task per journal partition and micro-batch
(egress/source.py); the records themselves never enter Spark. A task:

1. with `exactlyOnce`, asks the journal reader group how far this partition was written, and skips a
   replayed range (or the part of it) that a committed transaction already covers;
2. reads its range of the journal (journal/reading.py);
3. drops redelivered duplicates (journal/redelivery.py);
4. routes and converts each entry (egress/converting.py) under the soft-failure policies; `fail`
   raises `BridgeStopped` before anything of the range is written;
5. publishes the messages of jmsToNats routes to NATS (nats_egress/publishing.py) and flushes them;
6. writes the records (kafka/writing.py), and reports what it did as a `TaskSummary` (`published`
   counts both).

Nothing here imports Spark: a task runs the same in a test process as in a Spark Python worker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import astuple, dataclass, field

from bridge_job.config import Delivery, JobConfig
from bridge_job.config.loading import PerConfig
from bridge_job.egress import pending_requests
from bridge_job.egress.converting import Action, Egress
from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats.journal import JournalEntry
from bridge_job.journal.holes import read_without_holes
from bridge_job.journal.reading import find_earlier, journal_consumer
from bridge_job.journal.redelivery import unresolved, without_duplicates
from bridge_job.kafka.clients import KafkaConfig, producer_config
from bridge_job.kafka.limits import TopicLimits
from bridge_job.kafka.reading import TopicPartition, committed_offset, stall_for
from bridge_job.kafka.registry import schema_registry
from bridge_job.kafka.waiting import patiently
from bridge_job.kafka.writing import (
    Addressed,
    Superseded,
    egress_transactional_id,
    producer_for,
    transactional_settings,
    write_at_least_once,
    write_transaction,
)
from bridge_job.nats.message import NatsPublish
from bridge_job.nats_egress import publishing
from bridge_job.spark import latency

log = logging.getLogger("jmsbridge.egress")


@dataclass
class TaskSummary:
    """What one task did with its range: the one row it hands back to Spark."""

    partition: int
    start: int
    end: int
    records: int = 0  # journal records read
    duplicates: int = 0  # redeliveries dropped
    published: int = 0
    dead_lettered: int = 0
    skipped: int = 0
    loops: int = 0  # messages this bridge's ingress sent, not sent back to their topic
    markers: int = 0  # epoch markers (formats/journal.py): a new writer of the journal, nothing to route
    routing_ns: int = 0  # time spent routing and converting, all records together
    started_ms: int = 0  # wall clock, so that the driver sees which tasks overlapped
    ended_ms: int = 0
    replayed: bool = False  # exactlyOnce: the range was written before a restart, skipped
    # Journal record written -> its range written to Kafka (or NATS), per routed record (spark/latency.py).
    latency_ms: int = 0  # summed
    latency_buckets: list[int] = field(default_factory=latency.no_latencies)

    def row(self) -> tuple[int | bool | list[int], ...]:
        return astuple(self)

    def add(self, other: TaskSummary) -> None:
        """`other`'s counts added to these (one range of a real-time interval)."""
        for name in ADDED:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.replayed = self.replayed or other.replayed
        self.latency_buckets = latency.added(self.latency_buckets, other.latency_buckets)

    def written(self, entries: Sequence[JournalEntry], written_ms: int) -> None:
        """The range is written: each routed entry's latency, from when the ingest journalled it."""
        for entry in entries:
            took = max(written_ms - entry.timestamp_ms, 0)
            self.latency_ms += took
            latency.count_latency(self.latency_buckets, took)


ADDED = (
    "records",
    "duplicates",
    "published",
    "dead_lettered",
    "skipped",
    "loops",
    "markers",
    "routing_ns",
    "latency_ms",
)


SUMMARY_SCHEMA = (
    "partition INT, start BIGINT, end BIGINT, records BIGINT, duplicates BIGINT, published BIGINT, "
    "dead_lettered BIGINT, skipped BIGINT, loops BIGINT, markers BIGINT, routing_ns BIGINT, "
    "started_ms BIGINT, ended_ms BIGINT, replayed BOOLEAN, latency_ms BIGINT, latency_buckets ARRAY<BIGINT>"
)


def _egress(config: JobConfig) -> Egress:
    limits = TopicLimits(config.bridge.kafka).limit
    return Egress(config, limits, pending_requests.lookup(config), schemas=schema_registry(config))


_egresses = PerConfig(_egress)


def current_egress(config_path: str) -> Egress:
    """The Egress for the config file as it is now; kept per process, rebuilt when the file changes,
    so that a route edit applies from the next batch on. It learns each topic's size limit once."""
    return _egresses.current(config_path)


def route_all(
    egress: Egress,
    entries: Sequence[JournalEntry],
    summary: TaskSummary,
    answered: list[Addressed] | None = None,
    to_nats: list[NatsPublish] | None = None,
) -> list[Addressed]:
    """The records to write for `entries`, counting outcomes into `summary`; the tombstones of the pending
    requests they answer go to `answered`, the messages of jmsToNats routes to `to_nats`."""
    records: list[Addressed] = []
    for entry in entries:
        outcome = egress.handle(entry)
        action = outcome.action
        if action is not Action.FAIL and answered is not None:
            answered.extend(outcome.also)
        if action is Action.NATS:
            assert outcome.nats is not None and to_nats is not None
            to_nats.append(outcome.nats)
            summary.published += 1
            continue
        if action is Action.PUBLISH or action is Action.DEAD_LETTER:
            assert outcome.topic is not None and outcome.record is not None
            records.append((outcome.topic, outcome.record))
            if action is Action.PUBLISH:
                summary.published += 1
            else:
                summary.dead_lettered += 1
            continue
        if action is Action.LOOP:
            summary.loops += 1
            continue
        assert outcome.failure is not None
        failure, source = outcome.failure, egress.source(entry)
        if action is Action.SKIP:
            summary.skipped += 1
            log.warning("skipped %s: %s: %s", source.describe(), failure.reason.value, failure.error)
            continue
        raise BridgeStopped(
            f"{source.describe()}: {failure.reason.value}: {failure.error} "
            f"(route {outcome.route or '-'}, policy fail): fix the message or the routes, or set "
            "onSoftFailure to skip or deadLetter"
        )
    return records


def transactional_writer(config: JobConfig, partition: int) -> KafkaConfig:
    """`exactlyOnce`: the settings of the producer that writes the journal partition's ranges."""
    transactional_id = egress_transactional_id(config.bridge_id, partition)
    return transactional_settings(producer_config(config.bridge.kafka), transactional_id)


def fence_former_writer(config: JobConfig, partition: int, settings: KafkaConfig | None = None) -> None:
    """`exactlyOnce`: open this process's producer of the partition (`settings`: its
    `transactional_writer`), which fences a former writer (a killed or frozen instance) and aborts its
    open transaction. Until then that transaction holds back the reader group's committed offset, where
    the task begins (a `read_committed` consumer waits for it, up to the transaction timeout: 2 minutes),
    and what the pending-request lookups can read."""
    writer = settings if settings is not None else transactional_writer(config, partition)
    patiently(
        lambda timeout: producer_for(writer),
        config.bridge.kafka,
        config.bridge.outages.patience_seconds,
        f"opening the producer of journal partition {partition}",
    )


def run(config_path: str, topic: str, partition: int, start: int, end: int) -> TaskSummary:
    summary = TaskSummary(partition, start, end, started_ms=int(time.time() * 1000))
    egress = current_egress(config_path)
    config = egress.config
    kafka = config.bridge.kafka
    consumer = journal_consumer(config)
    exactly_once = config.bridge.delivery is Delivery.EXACTLY_ONCE
    patience = config.bridge.outages.patience_seconds
    transactional = transactional_writer(config, partition) if exactly_once else None
    if transactional is not None:
        fence_former_writer(config, partition, transactional)
        done = patiently(
            lambda timeout: committed_offset(consumer, topic, partition, timeout),
            kafka,
            patience,
            "asking how far the journal was written",
        )
        if done >= end:
            log.info("journal %s/%d up to %d was written before a restart: skipped", topic, partition, end)
            ended_ms = int(time.time() * 1000)  # nothing of the range counts: it was not written
            return TaskSummary(
                partition, start, end, started_ms=summary.started_ms, ended_ms=ended_ms, replayed=True
            )
        start = max(start, done)

    read = read_without_holes(config, topic, partition, start, end, stall_for(patience))
    entries = [e for e in read if not e.is_marker]
    summary.markers = len(read) - len(entries)
    summary.records = len(entries)
    wanted = unresolved(entries)
    earlier: set[str] = set()
    if wanted:
        window_ms = config.bridge.spark.dedup_window_seconds * 1000
        not_before, stall = min(wanted.values()) - window_ms, stall_for(patience)
        earlier = patiently(
            lambda timeout: find_earlier(
                consumer, topic, partition, start, wanted, not_before, timeout, stall
            ),
            kafka,
            patience,
            "looking back for the originals of redelivered messages",
        )
    kept = without_duplicates(entries, earlier)
    summary.duplicates = len(entries) - len(kept)

    began = time.perf_counter_ns()
    answered: list[Addressed] = []
    to_nats: list[NatsPublish] = []
    records = route_all(egress, kept, summary, answered, to_nats)
    summary.routing_ns = time.perf_counter_ns() - began
    publishing.publish_all(config, to_nats)  # before the range counts as written
    records += pending_requests.tombstones(config, partition, start, end, answered, transactional is not None)

    if transactional is not None:
        progress = TopicPartition(topic, partition, end)
        try:
            write_transaction(transactional, records, consumer, progress, patience, begun=start)
        except Superseded:
            # Nothing of the range counts: it was not written. It ends where the other writer got to,
            # which may be short of `end`: a real-time task carries on from there.
            reached = patiently(
                lambda timeout: committed_offset(consumer, topic, partition, timeout),
                kafka,
                patience,
                "asking how far the other writer got",
            )
            log.warning(
                "journal %s/%d: another writer committed up to %d (the bridge's other instance took over): "
                "not writing %d..%d",
                topic,
                partition,
                reached,
                start,
                end,
            )
            ended_ms = int(time.time() * 1000)
            return TaskSummary(
                partition, start, reached, started_ms=summary.started_ms, ended_ms=ended_ms, replayed=True
            )
    else:
        write_at_least_once(producer_config(kafka), records, kafka.bootstrap_servers, patience)
    pending_requests.written(config, records)
    summary.ended_ms = int(time.time() * 1000)
    summary.written(kept, summary.ended_ms)
    return summary
