"""Journal ingest: JMS -> journal topic, in the driver, one transacted JMS session per source.

The sources are spread over ingest partitions (ingest/assignment.py: one per journal partition that has
sources), each with a JMS connection and a transactional journal producer of its own, so that sources of
different partitions journal side by side. For each received batch: write every message to the journal in
one Kafka transaction of its partition's producer (journal/writer.py: transactional, fenced per partition),
and only once it committed, commit the JMS session. A crash or a Kafka error before the commit rolls the
batch back on the broker, which redelivers it: the journal may get a message twice (the Spark query drops
such duplicates by JMSMessageID), never lose one.

Kafka being unreachable is transient (roll back, back off, try again); a missing journal topic or a
refused write is a hard failure that stops the bridge, and finding the journal taken over by another
instance (`JournalFenced`) stops this one as losing the lease does.

A standby warms its clients up before it holds the lease (`warm_up`): the JMS client's JVM, a probe
connection to the broker (closed again: the active holds the bridge's JMS client id), and the journal
producers' connections. `start` then takes the journal's transactional ids (fencing the ones no partition
of it writes with, `fence_idle_writers`) and starts consuming.

A message that cannot become a journal record (ingest/poison.py: invalid text, an unmappable property,
too large) is a soft failure under `routing.onSoftFailure`: `fail` stops the bridge and names the message;
`skip` drops it (logged); `deadLetter` writes its dead letter to the dead-letter topic in the same flush
as the batch's journal records, so the JMS commit waits for both. Nothing behind it waits.

JMS failures (a lost connection, a commit the provider rolled back after its failover) roll the batch
back, reconnect with backoff (jms/link.py) and carry on: the broker redelivers the batch, and the
egress drops what the journal already holds. Only failing for longer than `spec.outages.patienceSeconds`
stops the bridge.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable

from bridge_job.config import JmsSource, JobConfig
from bridge_job.faults.outages import Outage, OutageListener
from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats import KafkaRecord
from bridge_job.formats.journal import Epoch, journal_partition
from bridge_job.ingest.assignment import ingest_partitions
from bridge_job.ingest.counts import Journalled
from bridge_job.ingest.health import RowHealth
from bridge_job.ingest.poison import describe, ingest_dead_letter, journal_or_failure
from bridge_job.jms import BatchConsumer, JmsConnection, JmsError, JmsRefused, detach_thread
from bridge_job.jms.link import JMS_HINT, JmsLink, Uncommitted
from bridge_job.jms.settings import jms_classpath, jms_credentials, jms_tls_stores, refused
from bridge_job.journal.writer import JournalWriter, KafkaUnreachable, Written, fence_idle_writers
from bridge_job.kafka.limits import TopicLimits
from bridge_job.kafka.waiting import kafka_outage, patiently, stop_if_refused
from bridge_job.kube.health import ConnectionHealth
from bridge_job.message import JmsMessage
from bridge_job.routing.failures import SoftFailure, SoftFailureReason, dispose

log = logging.getLogger("jmsbridge.ingest")


def ingest_client_id(config: JobConfig, instance: str) -> str:
    """The ingest's JMS client id: `jms.clientId` when set; else one per bridge when a durable subscription
    needs it stable across restarts and failovers; else one per instance. A broker takes a client id once,
    so a new active instance with the same id as a frozen former one waits until the broker drops that one
    (ActiveMQ: its inactivity timeout, 30 s and more); queues need no stable id."""
    jms = config.bridge.jms
    if jms.client_id:
        return jms.client_id
    durable = any(source.durable_subscription for source in jms.sources)
    return f"jmsbridge-{config.bridge_id}" if durable else f"jmsbridge-{config.bridge_id}-{instance}"


class Ingest:
    """The bridge's ingest partitions (`IngestPartition`), which start, fail and stop together."""

    def __init__(
        self,
        config: JobConfig,
        partitions: int,
        on_batch: Callable[[Journalled], None] = lambda batch: None,  # journalled and committed
        health: ConnectionHealth | None = None,
        instance: str = "a",
        kafka_health: ConnectionHealth | None = None,
        still_active: Callable[[], None] = lambda: None,
    ) -> None:
        """`partitions`: the journal topic's, one ingest partition each; `still_active` raises
        (LeadershipLost) when this instance no longer holds the lease."""
        self.config = config
        self.partitions = partitions
        self.still_active = still_active
        self.kafka_health = kafka_health
        self.stop_event = threading.Event()
        assigned = ingest_partitions(config.bridge.jms.sources, partitions)
        self.busy = set(assigned)  # the partitions with sources, each with a producer of its own
        client_id = ingest_client_id(config, instance)
        limits = TopicLimits(config.bridge.kafka)  # asked of the broker once per topic, for every partition
        holder = next((p for p, sources in assigned.items() if any(s.topic for s in sources)), min(assigned))
        self.parts = [
            IngestPartition(
                config,
                sources,
                JournalWriter(config, partitions, still_active, p),
                client_id if p == holder else f"{client_id}-ingest-{p}",  # one connection per client id
                limits,
                self.stop_event,
                on_batch,
                health,
                kafka_health,
            )
            for p, sources in assigned.items()
        ]

    @property
    def failure(self) -> BaseException | None:
        """What stopped the first partition that failed, if any: every other stops with it."""
        return next((part.failure for part in self.parts if part.failure is not None), None)

    def warm_up(self, instance: str) -> Ingest:
        """What a standby does before it holds the lease: nothing consumed, nothing written."""
        for index, part in enumerate(self.parts):
            part.warm_up(instance if index == 0 else None)  # one probe connection says enough
        return self

    def start(self, epoch: Epoch) -> Ingest:
        """Fence the journal ids no partition writes with, then start each partition for `epoch`."""
        bridge = self.config.bridge
        patiently(  # before any partition writes: a former writer must not write beside it
            lambda timeout: fence_idle_writers(self.config, self.partitions, self.busy, self.still_active),
            bridge.kafka,
            bridge.outages.patience_seconds,
            "fencing the journal's idle transactional ids",
            listener=self.kafka_health,
        )
        for part in self.parts:
            if self.stop_event.is_set():
                break
            part.start(epoch)
        return self

    def stop(self) -> None:
        self.stop_event.set()
        for part in self.parts:
            part.stop()

    def connected(self, go_on: Callable[[], bool]) -> bool:
        """True: `start` returned with every partition connected."""
        return True


class IngestInTasks:
    """The driver's part when the ingest runs in tasks on executors (ingest/source.py): before the gate opens,
    it takes every journal id (fencing any former writer, so that no task of a former active writes beside
    the new one's); the tasks do the rest, and their failures stop the ingest query."""

    failure: BaseException | None = None  # the tasks' failures end the query, and the driver sees that

    def __init__(
        self,
        config: JobConfig,
        partitions: int,
        health: OutageListener,
        kafka_health: OutageListener,
        still_active: Callable[[], None] = lambda: None,
    ) -> None:
        self.config = config
        self.partitions = partitions
        self.kafka_health = kafka_health
        self.still_active = still_active
        self.stop_event = threading.Event()
        self.rows = RowHealth(health, kafka_health)  # the tasks' health, from their rows

    def connected(self, go_on: Callable[[], bool]) -> bool:
        """Once every task has connected to JMS (True), as the driver's own ingest has after `start`;
        False when `go_on()` says to stop waiting. At most one task interval: the rows that say so come
        by UDP, and the interval's end is read only once the driver supervises (a network that drops
        the reports must not hold the job before it)."""
        busy = ingest_partitions(self.config.bridge.jms.sources, self.partitions)
        seconds = self.config.bridge.spark.task_interval_seconds
        deadline = time.monotonic() + seconds
        if self.rows.wait_connected(busy, lambda: go_on() and time.monotonic() < deadline):
            return True
        if not go_on():
            return False
        log.warning(
            "the ingest tasks have not reported a JMS connection within %ss (their reports may not reach "
            "the driver): going on",
            seconds,
        )
        return True

    def warm_up(self, instance: str) -> IngestInTasks:
        return self

    def start(self, epoch: Epoch) -> IngestInTasks:
        configured = self.config.bridge.kafka.journal_partitions
        if configured != self.partitions:  # the tasks plan with the spec's count (ingest/source.py)
            raise BridgeStopped(
                f"the journal topic {self.config.journal_topic} has {self.partitions} partitions and "
                f"kafka.journalPartitions says {configured}: set kafka.journalPartitions to {self.partitions}"
            )
        bridge = self.config.bridge
        patiently(
            lambda timeout: fence_idle_writers(self.config, self.partitions, (), self.still_active),
            bridge.kafka,
            bridge.outages.patience_seconds,
            "fencing the journal's transactional ids",
            listener=self.kafka_health,
        )
        return self

    def stop(self) -> None:
        """Nothing of its own runs: the query's tasks stop with it."""


class IngestPartition:
    """Threads that move the messages of some JMS sources into the journal until stopped or failed."""

    def __init__(
        self,
        config: JobConfig,
        sources: list[JmsSource],
        writer: JournalWriter,
        client_id: str,
        limits: TopicLimits,
        stop_event: threading.Event,
        on_batch: Callable[[Journalled], None] = lambda batch: None,  # journalled and committed
        health: OutageListener | None = None,
        kafka_health: OutageListener | None = None,
    ) -> None:
        self.config = config
        self.sources = sources
        self.writer = writer
        self.health = health
        self.kafka_health = kafka_health
        self.patience = config.bridge.outages.patience_seconds
        self.on_batch = on_batch
        self.partitions = writer.partitions
        self.stop_event = stop_event
        self.failure: BaseException | None = None
        self.threads: list[threading.Thread] = []
        self.uncommitted: dict[str, Uncommitted] = {}  # per source: journalled, not committed on JMS
        self.link: JmsLink | None = None
        self.limits = limits
        self.client_id = client_id
        self._credentials = jms_credentials(config)
        self._stores = jms_tls_stores(config)

    @property
    def connection(self) -> JmsConnection | None:
        return None if self.link is None else self.link.connection

    def _open(self, client_id: str) -> JmsConnection:
        jms = self.config.bridge.jms
        return JmsConnection(jms, self._credentials, jms_classpath(self.config), client_id, self._stores)

    def warm_up(self, instance: str | None) -> None:
        """What a standby does before it holds the lease: nothing consumed, nothing written; a probe
        connection to the broker when given the `instance`."""
        self.limits.limit(self.config.journal_topic)
        self.writer.warm_up()
        if instance is None:
            return
        try:
            self._open(f"{self.client_id}-standby-{instance}").close()
        except JmsError as error:  # the active may be failing too: the takeover will say, not the standby
            log.warning("standby: cannot reach the JMS broker yet: %s", error)

    def start(self, epoch: Epoch) -> None:
        """Take the partition's journal id for `epoch` (fencing any former writer) and start consuming."""
        self.link = JmsLink(lambda: self._open(self.client_id))
        self.limits.limit(self.config.journal_topic)  # learned before the first message
        try:
            self.writer.open(epoch)
        except KafkaUnreachable as error:
            log.warning("cannot take the journal's transactional id yet (%s): retrying per batch", error)
        outage = Outage("JMS", self.patience, listener=self.health, hint=JMS_HINT)
        while True:  # the first connection gets the same window as a reconnection
            try:
                self.link.connect()
                break
            except JmsRefused as error:
                raise refused(self.config, error) from None
            except JmsError as error:
                outage.failed(error)
                if self.stop_event.wait(outage.backoff()):
                    return
        outage.clear()
        if self.health is not None:
            self.health.back("JMS")  # connected: also clears what an earlier run of this instance left
        self.consume()

    def consume(self) -> None:
        """A thread per source, each with a consumer of its own, until stopped or paused."""
        self.threads = [
            threading.Thread(target=self._run, args=(source,), name=f"ingest-{source.address}", daemon=True)
            for source in self.sources
        ]
        for thread in self.threads:
            thread.start()

    def has_uncommitted(self) -> bool:
        """Whether batches journalled but not committed on JMS are still to come back."""
        return any(self.uncommitted.values())

    def pause(self) -> None:
        """Stop consuming, each source's batch in hand finished and its consumer closed (which returns the
        messages it prefetched to the broker); the connection and the journal producer stay, for `consume`."""
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout=30)
        self.threads = []
        self.stop_event.clear()

    def stop(self) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout=30)
        if self.link is not None:
            self.link.close()
        self.writer.close()

    def _run(self, source: JmsSource) -> None:
        assert self.link is not None
        outage = Outage(f"JMS source {source.address}", self.patience, listener=self.health, hint=JMS_HINT)
        journalling = f"journalling {source.address}"
        kafka = kafka_outage(self.config.bridge.kafka, self.patience, journalling, listener=self.kafka_health)
        consumer: BatchConsumer | None = None
        uncommitted = self.uncommitted.setdefault(source.address, Uncommitted())  # kept across pauses
        try:
            while not self.stop_event.is_set():
                try:
                    if consumer is None:
                        consumer = self.link.consumer(source)
                    self._pump(consumer, uncommitted, kafka)
                except JmsRefused as error:  # a reconnection, after the password or a store changed
                    raise refused(self.config, error) from None
                except JmsError as error:
                    outage.failed(error, "batch rolled back, reconnecting")  # BridgeStopped past the patience
                    consumer = self.link.recover(consumer)
                    self.stop_event.wait(outage.backoff())
                else:
                    outage.clear()
        except BaseException as error:
            if not self.stop_event.is_set():
                self.failure = error
                self.stop_event.set()
        finally:
            if consumer is not None:
                with contextlib.suppress(JmsError):
                    consumer.close()
            detach_thread()

    def _pump(self, consumer: BatchConsumer, uncommitted: Uncommitted, kafka: Outage) -> None:
        """One batch: received, journalled and committed (or rolled back for redelivery, while Kafka does
        not answer, within the patience); JmsError when the broker fails us."""
        ingest = self.config.bridge.jms.ingest

        def receive() -> list[JmsMessage]:
            return uncommitted.flag(
                consumer.receive_batch(ingest.max_batch_messages, ingest.max_batch_delay_ms)
            )

        while True:
            batch = receive()
            if not batch:
                return
            _read_twice(batch)
            written = self._journal(batch)
            if written is not None:
                break
            uncommitted.add(batch)  # some of it may be in the journal
            consumer.rollback()  # the broker redelivers the batch; nothing is lost
            stop_if_refused(self.config.bridge.kafka)  # a refused login is no outage to wait out
            kafka.failed(self.writer.failure or "the journal write failed", "batch rolled back")
            if self.stop_event.wait(kafka.backoff()):
                return
        kafka.clear()
        try:
            consumer.commit()
        except JmsError:
            uncommitted.add(batch)  # journalled, and coming back
            raise
        self.on_batch(Journalled.of(batch, written, self.config.journal_topic))

    def _records(self, batch: list[JmsMessage]) -> list[Written]:
        """What to write for a batch: journal records, and dead letters for poison messages."""
        topic = self.config.journal_topic
        limit = self.limits.limit(topic)
        written: list[Written] = []
        for message in batch:
            outcome = journal_or_failure(message, limit, topic)
            if isinstance(outcome, KafkaRecord):
                written.append((topic, outcome, journal_partition(message, self.partitions)))
            else:
                self._poison(message, outcome, written)
        return written

    def _poison(self, message: JmsMessage, failure: SoftFailure, written: list[Written]) -> None:
        """A message with no journal record, by the bridge's policy (no route has taken it yet)."""
        said = f"{describe(message)}: {failure.reason.value}: {failure.error}"

        def fail() -> None:
            limits = self.limits.describe(self.config.journal_topic)
            raise BridgeStopped(poison_stop(message, failure, limits))

        def dead_letter(topic: str) -> None:
            written.append((topic, ingest_dead_letter(message, failure, self.limits.limit(topic)), None))
            log.warning("dead-lettered %s", said)

        dispose(self.config, None, fail, lambda: log.warning("skipped %s", said), dead_letter)

    def _journal(self, batch: list[JmsMessage]) -> list[Written] | None:
        """What the batch's committed transaction wrote; None on a transient error; raises on a hard one."""
        written = self._records(batch)
        return written if self.writer.write(written) else None


def _read_twice(batch: list[JmsMessage]) -> None:
    """JmsError for a batch with a message the client could not read the first time it came: rolled back
    once, so that a connection that failed mid-read is not taken for a broken message (which is poison
    only when it comes back redelivered and still cannot be read)."""
    first = next((m for m in batch if m.unreadable is not None and not m.redelivered), None)
    if first is not None:
        raise JmsError(f"cannot read {describe(first)}: {first.unreadable}; rolled back to read it again")


def poison_stop(message: JmsMessage, failure: SoftFailure, limits: str) -> str:
    """The stop line for a poison message under `onSoftFailure: fail`: which, where, why, what to change."""
    fix = "fix the message at its producer"
    if failure.reason is SoftFailureReason.MESSAGE_TOO_LARGE:
        fix = f"raise the limits ({limits}; docs/egress.md, Size limits)"
    return (
        f"{describe(message)}: {failure.reason.value}: {failure.error} (policy fail; the message stays on "
        f"the broker): {fix}, or set routing.onSoftFailure to skip or deadLetter"
    )


DriverIngest = Ingest | IngestInTasks  # what the driver starts, stops and watches of the ingest
