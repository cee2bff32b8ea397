"""A producer that writes batches of records in Kafka transactions, one transaction a batch, for a writer
that holds its `transactional.id` alone (the journal's: journal/writer.py says what it promises).

Opening the producer (`init_transactions`) bumps the transactional id's epoch: Kafka aborts the open
transaction of any earlier producer with that id and refuses its later writes. Each opening writes the
writer's `opening_records` in a transaction of their own (the journal's epoch markers).

Failures: a hard failure (`hard_failure`: a person must act) raises BridgeStopped; being fenced raises
what `fenced_out` says; anything else (Kafka unreachable, a timeout, an abortable transaction) aborts the
transaction and makes `write` return False, so the caller rolls its batch back and tries again. A
producer in an unknown state is replaced, and the new one's opening aborts whatever the old one left open.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException, Producer

from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats import KafkaRecord
from bridge_job.kafka.clients import KafkaConfig, delivery_failure, is_hard
from bridge_job.kafka.writing import fenced

log = logging.getLogger("jmsbridge.ingest")

Written = tuple[str, KafkaRecord, int | None]  # topic, record, partition (None: the producer's choice)

CALL_TIMEOUT_SECONDS: Final = 30.0

# What `open` raises when Kafka cannot be reached: the caller waits it out.
KafkaUnreachable = KafkaException


def _error_of(failed: KafkaException) -> object:
    return failed.args[0] if failed.args else failed


def describe(error: object) -> str:
    return error.str() if isinstance(error, KafkaError) else str(error)


class TransactionalBatches:
    """Batches written in transactions of one transactional id; safe to share between threads.

    A subclass says what is particular to its id: `opening_records`, `hard_failure` and `fenced_out`."""

    def __init__(self, settings: KafkaConfig, still_active: Callable[[], None] = lambda: None) -> None:
        """`settings`: a transactional producer's (kafka/writing.py `transactional_settings`).
        `still_active` raises when this instance may no longer write (a lease lost): a zombie begins no
        transaction and never takes the id back from the instance that fenced it."""
        self.settings = settings
        self.transactional_id = str(settings["transactional.id"])
        self.still_active = still_active
        self._lock = threading.Lock()  # one transaction at a time
        self.producer = Producer(settings)  # connects now; fences nobody before `open`
        self._ready = False
        self.failure: str | None = None  # the last transient failure of `write`

    def opening_records(self) -> Sequence[Written]:
        """What each opening of the producer writes, in a transaction of its own."""
        return ()

    def hard_failure(self, error: object) -> BridgeStopped | None:
        """The hard failure a Kafka error of this producer is, if any."""
        return None

    def fenced_out(self) -> Exception:
        """What to raise when another producer took the transactional id."""
        return BridgeStopped(f"another producer took the transactional id {self.transactional_id}")

    def warm_up(self, topic: str) -> None:
        """Connect and learn `topic`'s metadata now (a standby does, before it holds the lease)."""
        self.producer.list_topics(topic, timeout=CALL_TIMEOUT_SECONDS)

    def open(self) -> None:
        """Take the transactional id (fencing every earlier writer) and write the opening records.
        KafkaUnreachable when Kafka cannot be reached; the next `write` tries again."""
        self._guarded(self._open)

    def take(self) -> None:
        """Take the transactional id, fencing every earlier producer of it, and write nothing (an id this
        instance does not write with). KafkaUnreachable when Kafka cannot be reached."""
        self._guarded(self._take)

    def _guarded(self, step: Callable[[], None]) -> None:
        with self._lock:
            try:
                step()
            except KafkaException as failed:
                self._raise_if_hard(_error_of(failed))
                raise

    def write(self, records: Sequence[Written]) -> bool:
        """True once `records` are committed in one transaction; False on a transient failure (nothing of
        them is visible to `read_committed` readers; `failure` says what it was)."""
        with self._lock:
            try:
                if not self._ready:
                    self._open()
                self._commit(records)
                self.failure = None
                return True
            except KafkaException as failed:
                error = _error_of(failed)
                self.failure = describe(error)
                self._recover(error)
                return False

    def close(self) -> None:
        with self._lock:
            self._ready = False
            # A fenced producer's flush raises its fatal error: nothing it holds could commit anyway.
            with contextlib.suppress(KafkaException):
                self.producer.flush(5)

    def _take(self) -> None:
        self.still_active()
        self.producer.init_transactions(CALL_TIMEOUT_SECONDS)

    def _open(self) -> None:
        self._take()
        self._ready = True
        opening = self.opening_records()
        self._commit(opening)
        log.info("producer %s opened: %d opening records written", self.transactional_id, len(opening))

    def _commit(self, records: Sequence[Written]) -> None:
        """One transaction; raises BridgeStopped for a hard failure, KafkaException otherwise."""
        failures: list[tuple[str, Any]] = []

        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                failures.append((message.topic(), error))

        self.still_active()  # a zombie begins nothing
        self.producer.begin_transaction()
        try:
            for topic, record, partition in records:
                self._produce(topic, record, partition, delivered)
            self.producer.commit_transaction(CALL_TIMEOUT_SECONDS)
        except KafkaException as failed:
            for topic, error in failures:
                if is_hard(error):
                    raise delivery_failure(topic, error) from None
            raise KafkaException(_error_of(failed)) from None
        for topic, error in failures:  # a commit that succeeded reports none; belt and braces
            raise delivery_failure(topic, error)

    def _produce(
        self, topic: str, record: KafkaRecord, partition: int | None, delivered: Callable[[Any, Any], None]
    ) -> None:
        while True:
            try:
                self.producer.produce(
                    topic,
                    record.value,
                    record.key,
                    partition=-1 if partition is None else partition,
                    headers=record.headers,  # type: ignore[arg-type]  # list is invariant
                    on_delivery=delivered,
                )
                return
            except BufferError:
                self.producer.poll(0.1)

    def _raise_if_hard(self, error: object) -> None:
        hard = self.hard_failure(error)
        if hard is not None:
            raise hard

    def _recover(self, error: object) -> None:
        """After a failed transaction: raise when it needs a person or another instance took over; else
        leave a producer that can begin the next one."""
        self._raise_if_hard(error)
        if fenced(error):
            self._ready = False
            raise self.fenced_out()
        text = describe(error)
        abortable = isinstance(error, KafkaError) and error.txn_requires_abort()
        if abortable and self._ready:
            try:
                self.producer.abort_transaction(CALL_TIMEOUT_SECONDS)
                log.warning(
                    "transaction of %s aborted (%s); the batch is rolled back", self.transactional_id, text
                )
                return
            except KafkaException as failed:
                text = str(failed)
        # Unknown state (Kafka unreachable, a timeout, a fatal error): a new producer, opened at the next
        # write, aborts whatever this one left open.
        log.warning(
            "producer %s failed (%s): replacing it; the batch is rolled back", self.transactional_id, text
        )
        self._ready = False
        self.producer.purge()  # else dropping it waits for its queued records to time out
        self.producer = Producer(self.settings)
