"""One ingest task: an ingest partition's JMS sources journalled for an interval, in a Python worker on an
executor (the switch: ingest/assignment.py `runs_on_executors`).

The task runs the driver's ingest code over its partition's sources (ingest/journalling.py
`IngestPartition`): a transacted JMS session per source, one transactional journal producer per partition
(`<bridgeId>.jms-bridge.journal-<p>`), the JMS commit after the journal's. At the interval's end it stops
receiving, finishes the batch in hand and closes its consumers (which returns what they prefetched to the
broker), and hands back its partition's counts (ingest/counts.py); while an outage is under way it goes
on past the end (`_overtime`), so that the outage's patience is counted in one process.

The connection and the producer outlive the task in this process (`_hosted`), for the partition's next
task when Spark gives it the same worker. They serve it only when this process ran the partition's last
interval: otherwise another process has initialised the producer's id since, which fenced this one, and
both are made again (a new producer, a new connection, new epoch markers). The partition holding the
bridge's durable subscriptions closes its connection at each interval's end: its client id is the
bridge's, which a broker gives to one connection at a time. The other partitions' connections get a client
id of their own per process.

The driver fenced every journal id before it opened the gate (journal/writer.py `fence_idle_writers`), so
a task of a former active's executors that still runs finds its producer fenced: it stops writing and
returns its counts with `fenced` set instead of failing, so that Spark does not retry it. Any other
failure (past the patience, a refused login, a poison message under `fail`) fails the task, and the query.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bridge_job.config import JobConfig
from bridge_job.config.loading import load_job_config
from bridge_job.formats.journal import Epoch
from bridge_job.ingest.assignment import ingest_partitions
from bridge_job.ingest.counts import IngestCounts, Journalled
from bridge_job.ingest.health import TaskHealth
from bridge_job.ingest.journalling import IngestPartition, ingest_client_id
from bridge_job.jms.connection import process_client_id
from bridge_job.journal.writer import JournalFenced, JournalWriter
from bridge_job.kafka.limits import TopicLimits
from bridge_job.kube.api import ApiError, NotConfigured
from bridge_job.kube.leadership import job_leases, tenure_ended
from bridge_job.spark.live import Row as LiveRow
from bridge_job.spark.live import reporting

log = logging.getLogger("jmsbridge.ingest")

Row = tuple[object, ...]
OVERTIME_POLL_SECONDS = 0.1


@dataclass
class _Hosted:
    """A partition's connection and producer in this process, and what they were opened for."""

    opened_for: tuple[object, ...]  # the config, the epoch and the sources
    part: IngestPartition
    last_interval: int


_hosted: dict[tuple[str, int], _Hosted] = {}  # per config path and partition: this process's
_lock = threading.Lock()


def run(
    config_path: str, partition: int, journal_partitions: int, interval: int, seconds: float, epoch: Epoch,
    live: str = "",
) -> list[Row]:  # fmt: skip
    """Journal the partition's sources for `seconds`, telling the driver at `live` what it did as it goes
    (spark/live.py); `interval` is the query's interval count, `epoch` whose journal it is."""
    started_ms = int(time.time() * 1000)
    config = load_job_config([Path(config_path)])
    counts, counted = IngestCounts(), threading.Lock()

    def on_batch(batch: Journalled) -> None:  # from each source's thread
        with counted:
            counts.add(batch)

    jms, kafka = TaskHealth(), TaskHealth()

    def so_far() -> dict[str, LiveRow]:
        with counted:
            return {str(partition): counts.row(partition) | {"jms": jms.column(), "kafka": kafka.column()}}

    part, fresh = _partition(config_path, config, partition, journal_partitions, interval, epoch)
    if fresh and (ended := _tenure_ended(config, epoch)) is not None:
        _drop(config_path, partition)
        log.warning("ingest partition %d takes no journal id: %s", partition, ended)
        counts.fenced = 1
        return [_row(partition, counts, jms, kafka, started_ms)]
    part.on_batch, part.health, part.kafka_health = on_batch, jms, kafka
    try:
        with reporting(live, "ingest", started_ms, so_far):
            if fresh:
                part.start(epoch)  # takes the journal id, connects (within the patience), consumes
            else:
                jms.back("JMS")  # connected in an earlier interval (a lost connection fails its sources)
                part.consume()
            part.stop_event.wait(seconds)  # set early when a source's thread failed
            _overtime(part, (jms, kafka), seconds)
            failure = part.failure
            part.pause()
    except BaseException:  # a refused login, the patience while connecting: nothing of it is kept
        _drop(config_path, partition)
        raise
    if failure is not None or any(source.topic is not None for source in part.sources):
        _drop(config_path, partition)
    if isinstance(failure, JournalFenced):
        log.warning("ingest partition %d: %s", partition, failure)
        counts.fenced = 1
    elif failure is not None:
        raise failure
    return [_row(partition, counts, jms, kafka, started_ms)]


class Overtimed(Protocol):
    """What `_overtime` looks at of a partition."""

    failure: BaseException | None
    stop_event: threading.Event

    def has_uncommitted(self) -> bool: ...


def _overtime(part: Overtimed, health: tuple[TaskHealth, ...], seconds: float) -> None:
    """Past the interval's end, the task goes on while an outage is under way, until it ends or the
    patience runs out (which fails the partition): the next interval's task may run in another process,
    whose outage would begin again, its patience and its log lines with it. And for at most one more
    interval while batches journalled but not committed on JMS are still to come back: only this process
    knows to flag them redelivered, should the broker redeliver them unflagged."""
    deadline = time.monotonic() + seconds
    while part.failure is None:
        if not any(h.failing_now() for h in health) and (
            not part.has_uncommitted() or time.monotonic() >= deadline
        ):
            return
        part.stop_event.wait(OVERTIME_POLL_SECONDS)


def _row(partition: int, counts: IngestCounts, jms: TaskHealth, kafka: TaskHealth, started_ms: int) -> Row:
    """The task's summary row (ingest/counts.py `SUMMARY_SCHEMA`)."""
    ended_ms = int(time.time() * 1000)
    return (partition, *counts.values(), jms.column(), kafka.column(), _where(), started_ms, ended_ms)


def _tenure_ended(config: JobConfig, epoch: Epoch) -> str | None:
    """Why the epoch's tenure is over, by one read of the bridge's Lease; None while it lasts, without a
    Lease, or when the Lease cannot be read (Kafka's fence at the takeover still holds then)."""
    try:
        store = job_leases(config) if epoch.tenure_start is not None else None
        return None if store is None else tenure_ended(store, epoch)
    except (ApiError, NotConfigured) as error:
        log.warning("cannot read the bridge's lease to check the tenure before taking the journal: %s", error)
        return None


def _partition(
    config_path: str, config: JobConfig, partition: int, journal_partitions: int, interval: int, epoch: Epoch
) -> tuple[IngestPartition, bool]:
    """This process's partition for the interval, and whether it is new (not yet started)."""
    sources = ingest_partitions(config.bridge.jms.sources, journal_partitions).get(partition, [])
    opened_for = (config, epoch, tuple(sources), journal_partitions)
    key = (config_path, partition)
    with _lock:
        hosted = _hosted.get(key)
        if hosted is not None and hosted.opened_for == opened_for and hosted.last_interval == interval - 1:
            hosted.last_interval = interval
            return hosted.part, False
    _drop(config_path, partition)
    durable = any(source.topic is not None for source in sources)
    client_id = (
        ingest_client_id(config, epoch.instance)
        if durable
        else process_client_id(config.bridge_id, f"ingest-{partition}")
    )
    part = IngestPartition(
        config,
        sources,
        JournalWriter(config, journal_partitions, ingest_partition=partition),
        client_id,
        TopicLimits(config.bridge.kafka),
        threading.Event(),
    )
    with _lock:
        _hosted[key] = _Hosted(opened_for, part, interval)
    return part, True


def _drop(config_path: str, partition: int) -> None:
    """Close this process's connection and producer of the partition, if it has them."""
    with _lock:
        hosted = _hosted.pop((config_path, partition), None)
    if hosted is not None:
        hosted.part.stop()


def _where() -> str:
    """Which executor ran the task: its host, its JVM (the worker daemon's parent) and the attempt."""
    from pyspark import TaskContext

    context = TaskContext.get()
    attempt = context.attemptNumber() if context is not None else 0
    return f"{socket.gethostname()}/{_executor_pid()}/{attempt}"


def _executor_pid() -> int:
    """The executor JVM's pid: a worker's parent is pyspark's daemon, whose parent is the JVM."""
    try:
        stat = Path(f"/proc/{os.getppid()}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return os.getppid()
