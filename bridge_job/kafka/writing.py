"""Writing a task's records to Kafka with confluent-kafka, in either delivery mode.

`atLeastOnce`: an idempotent producer (acks=all), flushed before the task reports success, so a batch
Spark commits is in Kafka. A batch Spark replays after a crash is written again (duplicates, never loss).

`exactlyOnce`: the records and the task's progress go in one Kafka transaction. The progress is the
journal offset up to which the task has written, committed as the offset of the journal reader's
consumer group for that journal partition (Kafka's consume-transform-produce pattern); a replayed range
at or below it is skipped. The `transactional.id` is stable per bridge and journal partition, so
opening it fences a crashed or partitioned former writer of that partition (a zombie).

Kafka unreachable is waited out for the bridge's patience (bridge_job/faults/outages.py): a flush waits that
long, and a transaction that fails for want of an answer is tried again, after the reader group's offset
says it did not commit after all. A failed delivery (topic missing, not authorized, ...) raises
`BridgeStopped`, which fails the task and stops the query: the batch is not committed, and after the cause
is fixed the job replays it. Producers
are kept per Python worker process (Spark reuses workers), so a batch does not pay for a connection.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from bridge_job.config import transactional_id_prefix
from bridge_job.faults.outages import Outage
from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats import KafkaRecord
from bridge_job.kafka.clients import NO_REBOOTSTRAP, UNKNOWN_TOPIC, KafkaConfig, delivery_failure, is_hard
from bridge_job.kafka.waiting import cause

log = logging.getLogger("jmsbridge.writing")

FLUSH_TIMEOUT_SECONDS = 120.0
TRANSACTION_TIMEOUT_SECONDS = 120.0
# A transaction takes a few calls of TRANSACTION_TIMEOUT_SECONDS each; one still running well past them
# will not return.
GIVE_UP_SECONDS = 4 * TRANSACTION_TIMEOUT_SECONDS

# A write not acknowledged within this long has its topics looked up: one that no longer exists is a hard
# failure at once. The client retries a produce to a deleted topic until the record's own timeout (the
# patience, or the transaction's timeout: minutes), taking it for a topic that is yet to be made.
SLOW_WRITE_SECONDS = 5.0

Addressed = tuple[str, KafkaRecord]  # a record and its destination topic

_producers: dict[tuple[tuple[str, object], ...], Producer] = {}


def producer_for(settings: KafkaConfig) -> Producer:
    key = tuple(sorted(settings.items()))
    producer = _producers.get(key)
    if producer is None:
        producer = Producer(settings)
        if "transactional.id" in settings:
            producer.init_transactions(TRANSACTION_TIMEOUT_SECONDS)  # fences any former writer
        _producers[key] = producer
    return producer


def close_producers() -> None:
    """Flush and drop this process's producers (a process that is done with the bridge)."""
    while _producers:
        _producers.popitem()[1].flush(FLUSH_TIMEOUT_SECONDS)


def forget_producer(settings: KafkaConfig) -> None:
    _producers.pop(tuple(sorted(settings.items())), None)


def fenced(error: object) -> bool:
    """Whether a producer lost its transactional id to a newer one (it must be replaced, not reused).

    `error` is a KafkaException or its KafkaError. Any fatal error counts: once librdkafka has raised the
    fencing itself, later calls on the producer say only `_FATAL`."""
    kafka_error = error.args[0] if isinstance(error, KafkaException) and error.args else error
    fatal = bool(getattr(kafka_error, "fatal", lambda: False)())
    name = str(getattr(kafka_error, "name", lambda: "")())
    return fatal or name in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "_FENCED", "_FATAL")


def egress_transactional_id(bridge_id: str, journal_partition: int) -> str:
    return f"{transactional_id_prefix(bridge_id)}egress-{journal_partition}"


def transactional_settings(
    producer: KafkaConfig, transactional_id: str, timeout_seconds: float = TRANSACTION_TIMEOUT_SECONDS
) -> KafkaConfig:
    """`producer`'s settings for writing in transactions of `transactional_id` (the journal's and the
    egress's alike), each aborted by the broker after `timeout_seconds`.

    Without re-bootstrapping (kafka/clients.NO_REBOOTSTRAP): with it, the offsets step of
    `send_offsets_to_transaction` was never sent after a whole-Kafka outage (AddOffsetsToTxn succeeded,
    TxnOffsetCommit never went out), and the call hung past its own timeout with the task.
    """
    return (
        producer
        | {"transactional.id": transactional_id, "transaction.timeout.ms": str(int(timeout_seconds * 1000))}
        | NO_REBOOTSTRAP
    )


_PURGED = (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT)


class Deliveries:
    """Delivery reports of one task: the first few failures, as clear hard failures, and whether the
    producer failed for good (an idempotent producer whose sequence the broker rejects).

    In a transaction (`in_transaction`), a record librdkafka purged is no failure of its own: it purges a
    transaction's records when the transaction fails (fenced, aborted), and the transaction's call says
    why; a purged record never commits."""

    def __init__(self, in_transaction: bool = False) -> None:
        self.failures: list[BridgeStopped] = []
        self.fatal: str | None = None
        self.in_transaction = in_transaction

    def __call__(self, error: Any, message: Any) -> None:
        if error is None or (self.in_transaction and error.code() in _PURGED):
            return
        if error.fatal():
            self.fatal = self.fatal or error.str()
        elif len(self.failures) < 10:
            self.failures.append(delivery_failure(message.topic(), error))


def produce_all(producer: Producer, records: Sequence[Addressed], deliveries: Deliveries) -> None:
    for index, (topic, record) in enumerate(records):
        while True:
            try:
                headers: Any = record.headers  # a list of (str, bytes) pairs, which librdkafka takes
                producer.produce(topic, record.value, record.key, headers=headers, on_delivery=deliveries)
                break
            except BufferError:
                producer.poll(0.1)  # the local queue is full: let deliveries drain
        if index % 1000 == 999:
            producer.poll(0)
            if deliveries.failures:
                raise deliveries.failures[0]


def missing_topic(producer: Producer, records: Sequence[Addressed]) -> str | None:
    """The first of the records' topics the cluster says does not exist, asked twice SLOW_WRITE_SECONDS
    apart (a broker that is starting answers so for a while), if any; None too when it cannot say
    (unreachable: the caller's patience decides)."""
    for topic in sorted({topic for topic, _ in records}):
        if _gone(producer, topic):
            time.sleep(SLOW_WRITE_SECONDS)
            if _gone(producer, topic):
                return topic
    return None


def _gone(producer: Producer, topic: str) -> bool:
    """Whether the cluster says `topic` does not exist; False when it does not answer."""
    try:
        found = producer.list_topics(topic, timeout=SLOW_WRITE_SECONDS).topics.get(topic)
    except KafkaException:
        return False
    return found is None or (found.error is not None and found.error.name() in UNKNOWN_TOPIC)


def flush_or_stop(producer: Producer, records: Sequence[Addressed]) -> None:
    """Wait SLOW_WRITE_SECONDS for the records' acknowledgements; still waiting, stop on a topic that no
    longer exists (deleted since the job checked its routes) rather than wait out the records' timeout."""
    if producer.flush(SLOW_WRITE_SECONDS) and (topic := missing_topic(producer, records)) is not None:
        raise delivery_failure(topic, KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))


def write_at_least_once(
    settings: KafkaConfig,
    records: Sequence[Addressed],
    servers: str,
    patience_seconds: float = FLUSH_TIMEOUT_SECONDS,
) -> None:
    """`records` written and acknowledged, waiting out Kafka for `patience_seconds`."""
    # A record is not given up (librdkafka's `message.timeout.ms`) before the flush that waits for it.
    settings = settings | {"message.timeout.ms": str(max(int(patience_seconds * 1000), 1000))}
    # A producer that failed for good (a broker that lost its idempotence state after a restart says
    # OUT_OF_ORDER_SEQUENCE_NUMBER) is replaced once and the range written again: duplicates, no loss.
    for attempt in (1, 2):
        producer = producer_for(settings)
        deliveries = Deliveries()
        try:
            produce_all(producer, records, deliveries)
            flush_or_stop(producer, records)
            remaining = producer.flush(patience_seconds)
        except (KafkaException, SystemError) as error:  # SystemError: a fatal error inside flush's callbacks
            if attempt == 2 or not (deliveries.fatal or isinstance(error, SystemError) or fenced(error)):
                raise
            deliveries.fatal = deliveries.fatal or str(error)
        if deliveries.fatal is None or attempt == 2:
            break
        log.warning(
            "the producer failed for good (%s): writing the range again with a new one", deliveries.fatal
        )
        forget_producer(settings)
    if deliveries.fatal is not None:
        raise BridgeStopped(f"Kafka producer to {servers} failed twice for good: {deliveries.fatal}")
    if deliveries.failures:
        raise deliveries.failures[0]
    if remaining:
        raise BridgeStopped(
            f"{remaining} records not acknowledged by Kafka at {servers} after {patience_seconds:.0f}s "
            "(spec.outages.patienceSeconds): is Kafka up?"
        )


def within(seconds: float, call: Callable[[], None], what: str) -> None:
    """`call()`, given up on once it has run for `seconds`: a librdkafka transactional call that lost its
    request waits past its own timeout, and a task that never returns stalls the bridge without a word.
    BridgeStopped then: the job stops, and its restart's producer fences the stuck one."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as error:  # re-raised in the caller's thread
            failure.append(error)

    worker = threading.Thread(target=run, name=what, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise BridgeStopped(
            f"{what} did not finish within {seconds:.0f}s: the Kafka client stopped answering; "
            "stopping so that a restart replaces it"
        )
    if failure:
        raise failure[0]


def _transact(
    settings: KafkaConfig,
    records: Sequence[Addressed],
    reader: Consumer,
    progress: TopicPartition,
    deliveries: Deliveries,
) -> None:
    producer = producer_for(settings)
    producer.begin_transaction()
    try:
        produce_all(producer, records, deliveries)
        # A fatal error inside flush's callbacks surfaces as SystemError; the next call raises it as it is.
        with contextlib.suppress(SystemError):
            flush_or_stop(producer, records)
        producer.send_offsets_to_transaction(
            [progress], reader.consumer_group_metadata(), TRANSACTION_TIMEOUT_SECONDS
        )
        producer.commit_transaction(TRANSACTION_TIMEOUT_SECONDS)
    except BaseException:
        try:
            producer.abort_transaction(TRANSACTION_TIMEOUT_SECONDS)
        except KafkaException:
            forget_producer(settings)
        if deliveries.failures:
            raise deliveries.failures[0] from None
        raise


class Superseded(Exception):
    """Another writer of the same journal partition committed past where this range began: this one
    writes nothing (it would write those records twice), and the task carries on from there."""


def written_up_to(reader: Consumer, progress: TopicPartition, timeout: float) -> bool:
    """Whether the reader group's committed offset has reached `progress` (a transaction did commit)."""
    (done,) = reader.committed([TopicPartition(progress.topic, progress.partition)], timeout=timeout)
    return bool(done.offset >= progress.offset)


def write_transaction(
    settings: KafkaConfig,
    records: Sequence[Addressed],
    reader: Consumer,
    progress: TopicPartition,
    patience_seconds: float = GIVE_UP_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
    begun: int | None = None,
) -> None:
    """`records` and the reader group's offset `progress` in one transaction of `settings`' id, tried
    again while Kafka does not answer, for `patience_seconds`. `begun`: the range's first offset; when
    the producer was fenced and the group committed past it since, `Superseded`."""
    # Spark may run the next batch in another of its Python workers, whose producer for the same
    # transactional id fenced this one: a fenced producer is replaced and the batch retried. A transaction
    # whose outcome is unknown (Kafka gone mid-commit) may have committed: the reader group's offset says.
    what = f"Kafka transaction {settings['transactional.id']} up to journal offset {progress.offset}"
    outage = Outage(what, patience_seconds, clock, hint="check that Kafka is up", describe=cause)
    fenced_before = False
    while True:
        transact = functools.partial(
            _transact, settings, records, reader, progress, Deliveries(in_transaction=True)
        )
        try:
            within(max(outage.left(), 1.0), transact, what)  # a stuck call is given up with the patience
            outage.clear()
            return
        except BridgeStopped:
            forget_producer(settings)  # a stuck one must not serve the next batch
            raise
        except KafkaException as error:
            forget_producer(settings)
            if fenced(error) and not fenced_before:
                fenced_before = True
                # Fenced by a newer producer of the same id: this process's own next one (Spark ran a
                # task in another worker), or another instance's (a zombie and its successor). A
                # writer that committed past this range's start is the other one: retrying would
                # fence it and write its records again.
                if begun is not None and written_up_to(
                    reader,
                    TopicPartition(progress.topic, progress.partition, begun + 1),
                    TRANSACTION_TIMEOUT_SECONDS,
                ):
                    raise Superseded(what) from None
                log.info("transactional producer %s was fenced; retrying with a new one", what)
                continue
            if fenced(error) or (error.args and is_hard(error.args[0])):
                raise BridgeStopped(f"{what} failed: {error}") from None
            outage.failed(error, "trying the transaction again")
        pause(outage.backoff())
        try:
            if written_up_to(reader, progress, max(1.0, min(outage.left(), TRANSACTION_TIMEOUT_SECONDS))):
                log.info("%s committed before Kafka stopped answering: not written again", what)
                outage.clear()
                return
        except KafkaException as error:
            outage.failed(error, "asking how far the journal was written")
