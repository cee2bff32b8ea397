"""The journal's producer: transactional, one `transactional.id` per bridge, so a new writer fences the old.

Every batch the ingest takes from JMS is written in one Kafka transaction (its journal records and the
dead letters of its poison messages), and the JMS session commits only after that transaction did. The
egress reads the journal `read_committed`, so it never sees a batch whose transaction did not commit.

Initialising the producer (`init_transactions`) bumps the transactional id's epoch: Kafka aborts the open
transaction of any earlier producer with that id and refuses its later writes. That is the fence of an
active/standby pair: the instance that takes over the lease initialises the producer first, so a former
active that was frozen or cut off (a zombie) can neither commit its batch in flight nor write another;
its JMS session never commits, and the broker redelivers those messages to the new active. Each start of
the producer then writes an epoch marker to every journal partition (journal/entries.py), in its own
transaction.

Its settings are the egress's transactional ones (kafka/writing.py `transactional_settings`), with a
shorter timeout: no re-bootstrapping after every broker was down, which would hang the next transaction.

A producer is (re)initialised only while `still_active` says so: a zombie whose lease ran out must not
take the transactional id back from the instance that fenced it.

Failures: a missing topic or a refused write is a hard failure (`BridgeStopped`); being fenced means
another instance writes the journal now (`JournalFenced`, which stops this one as a lost lease does);
anything else (Kafka unreachable, a timeout, an abortable transaction) aborts the transaction and
returns False, so that the ingest rolls the JMS batch back and tries again. A producer in an unknown
state is replaced, and the new one's initialisation aborts whatever the old one left open.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException, Producer

from bridge_job.config import JobConfig, transactional_id_prefix
from bridge_job.errors import BridgeStopped
from bridge_job.formats import KafkaRecord
from bridge_job.journal.entries import Epoch
from bridge_job.kafka.clients import delivery_failure, is_hard, producer_config
from bridge_job.kafka.writing import fenced, transactional_settings
from bridge_job.kube.leadership import LeadershipLost

log = logging.getLogger("jmsbridge.ingest")

Written = tuple[str, KafkaRecord, int | None]  # topic, record, partition (None: the producer's choice)

# Short, so that a frozen instance's open transaction holds the journal's readers back only briefly when
# no instance initialises the id (a single instance that never came back).
TRANSACTION_TIMEOUT_MS: Final = 60_000
CALL_TIMEOUT_SECONDS: Final = 30.0


class JournalFenced(LeadershipLost):
    """Another instance of the bridge initialised the journal's transactional id: this one must stop."""


def journal_transactional_id(bridge_id: str) -> str:
    return f"{transactional_id_prefix(bridge_id)}journal"


def hard_failure(error: object, config: JobConfig) -> BridgeStopped | None:
    """The hard failure a Kafka error of the journal's producer is, if any: a person must act."""
    if str(getattr(error, "name", lambda: "")()) == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED":
        return BridgeStopped(
            f"not authorized to use the transactional id {journal_transactional_id(config.bridge_id)} (the "
            f"journal is written in transactions): grant WRITE and DESCRIBE on transactional ids with the "
            f"prefix {transactional_id_prefix(config.bridge_id)} to the bridge's principal"
        )
    return delivery_failure(config.journal_topic, error) if is_hard(error) else None


class JournalWriter:
    """Writes batches to the journal in transactions; shared by the ingest's source threads."""

    def __init__(
        self, config: JobConfig, partitions: int, still_active: Callable[[], None] = lambda: None
    ) -> None:
        """`still_active` raises (LeadershipLost) when this instance no longer holds the lease."""
        self.config = config
        self.partitions = partitions
        self.epoch: Epoch | None = None  # whose journal it is, from `open` on
        self.still_active = still_active
        self.transactional_id = journal_transactional_id(config.bridge_id)
        self.settings = transactional_settings(
            producer_config(config.bridge.kafka), self.transactional_id, TRANSACTION_TIMEOUT_MS / 1000
        )
        self._lock = threading.Lock()  # one transaction at a time
        self.producer = Producer(self.settings)  # connects now; fences nobody before `open`
        self._ready = False
        self.failure: str | None = None  # the last transient failure of `write`

    def warm_up(self) -> None:
        """Connect and learn the cluster's metadata now (a standby does, before it holds the lease)."""
        self.producer.list_topics(self.config.journal_topic, timeout=CALL_TIMEOUT_SECONDS)

    def open(self, epoch: Epoch) -> None:
        """Take the transactional id (fencing every earlier writer) and write `epoch`'s markers.
        KafkaException when Kafka cannot be reached; the next `write` tries again."""
        with self._lock:
            self.epoch = epoch
            try:
                self._open()
            except KafkaException as failed:
                self._raise_if_hard(failed.args[0] if failed.args else failed)
                raise

    def write(self, records: Sequence[Written]) -> bool:
        """True once `records` are committed in one transaction; False on a transient failure (nothing of
        them is visible to the journal's readers; `failure` says what it was)."""
        with self._lock:
            try:
                if not self._ready:
                    self._open()
                self._commit(records)
                self.failure = None
                return True
            except KafkaException as failed:
                error = failed.args[0] if failed.args else failed
                self.failure = error.str() if isinstance(error, KafkaError) else str(error)
                self._recover(error)
                return False

    def close(self) -> None:
        with self._lock:
            self._ready = False
            # A fenced producer's flush raises its fatal error: nothing it holds could commit anyway.
            with contextlib.suppress(KafkaException):
                self.producer.flush(5)

    def _open(self) -> None:
        assert self.epoch is not None, "write before open"
        self.still_active()
        self.producer.init_transactions(CALL_TIMEOUT_SECONDS)
        self._ready = True
        written = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
        marker = self.epoch.marker(written)
        self._commit([(self.config.journal_topic, marker, p) for p in range(self.partitions)])
        log.info(
            "journal producer %s started: epoch marker for %s in %d partitions",
            self.transactional_id,
            self.epoch.holder,
            self.partitions,
        )

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
            raise KafkaException(failed.args[0] if failed.args else failed) from None
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
        hard = hard_failure(error, self.config)
        if hard is not None:
            raise hard

    def _recover(self, error: object) -> None:
        """After a failed transaction: raise when it needs a person or another instance took over; else
        leave a producer that can begin the next one."""
        self._raise_if_hard(error)
        if fenced(error):
            self._ready = False
            raise JournalFenced(
                f"another instance of bridge {self.config.bridge_id} took over the journal "
                f"(transactional id {self.transactional_id}): this one stops writing"
            )
        text = error.str() if isinstance(error, KafkaError) else str(error)
        abortable = isinstance(error, KafkaError) and error.txn_requires_abort()
        if abortable and self._ready:
            try:
                self.producer.abort_transaction(CALL_TIMEOUT_SECONDS)
                log.warning("journal transaction aborted (%s); the batch is rolled back", text)
                return
            except KafkaException as failed:
                text = str(failed)
        # Unknown state (Kafka unreachable, a timeout, a fatal error): a new producer, initialised at the
        # next write, aborts whatever this one left open.
        log.warning("journal producer failed (%s): replacing it; the batch is rolled back", text)
        self._ready = False
        self.producer.purge()  # else dropping it waits for its queued records to time out
        self.producer = Producer(self.settings)
