"""The journal's producers: transactional, one `transactional.id` per ingest partition of a bridge
(`<bridgeId>.jms-bridge.journal-<p>`, ingest/assignment.py), so a new writer fences the old.

Every batch the ingest takes from JMS is written in one Kafka transaction (its journal records and the
dead letters of its poison messages), and the JMS session commits only after that transaction did. The
egress reads the journal `read_committed`, so it never sees a batch whose transaction did not commit.

Initialising the producer (`init_transactions`) bumps the transactional id's epoch: Kafka aborts the open
transaction of any earlier producer with that id and refuses its later writes. That is the fence of an
active/standby pair: the instance that takes over the lease initialises the producer first, so a former
active that was frozen or cut off (a zombie) can neither commit its batch in flight nor write another;
its JMS session never commits, and the broker redelivers those messages to the new active. Each start of
a producer then writes an epoch marker to every journal partition (formats/journal.py), in its own
transaction. Before its producers start, the instance also fences the id of a bridge from before ingest
partitions (`<bridgeId>.jms-bridge.journal`, which a former active of an older build may still hold) and
those of partitions that have no source now (`fence_idle_writers`): the topic never loses partitions, so
these are every id a former writer of the bridge can have used.

Its settings are the egress's transactional ones (kafka/writing.py `transactional_settings`), with a
shorter timeout: no re-bootstrapping after every broker was down, which would hang the next transaction.

A producer is (re)initialised only while `still_active` says so: a zombie whose lease ran out must not
take the transactional id back from the instance that fenced it.

Failures (kafka/transactions.py writes the batches): a missing topic or a refused write is a hard
failure (`BridgeStopped`); being fenced means another instance writes the journal now (`JournalFenced`,
which stops this one as a lost lease does); anything else (Kafka unreachable, a timeout, an abortable
transaction) aborts the transaction and returns False, so that the ingest rolls the JMS batch back and
tries again. A producer in an unknown state is replaced, and the new one's initialisation aborts
whatever the old one left open.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from bridge_job.config import JobConfig, transactional_id_prefix
from bridge_job.faults.stops import BridgeStopped, LeadershipLost
from bridge_job.formats.journal import Epoch
from bridge_job.kafka.clients import delivery_failure, is_hard, producer_config
from bridge_job.kafka.transactions import KafkaUnreachable, TransactionalBatches, Written
from bridge_job.kafka.writing import transactional_settings

__all__ = [
    "JournalFenced",
    "JournalWriter",
    "KafkaUnreachable",
    "Written",
    "fence_idle_writers",
    "journal_transactional_id",
]

# Short, so that a frozen instance's open transaction holds the journal's readers back only briefly when
# no instance initialises the id (a single instance that never came back).
TRANSACTION_TIMEOUT_MS: Final = 60_000


class JournalFenced(LeadershipLost):
    """Another instance of the bridge initialised the journal's transactional id: this one must stop."""


def journal_transactional_id(bridge_id: str, ingest_partition: int | None = None) -> str:
    """The journal producer's id of `ingest_partition`; without one, the id of builds before ingest
    partitions, which is only ever fenced now."""
    suffix = "" if ingest_partition is None else f"-{ingest_partition}"
    return f"{transactional_id_prefix(bridge_id)}journal{suffix}"


def hard_failure(error: object, config: JobConfig, transactional_id: str) -> BridgeStopped | None:
    """The hard failure a Kafka error of a journal producer is, if any: a person must act."""
    if str(getattr(error, "name", lambda: "")()) == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED":
        return BridgeStopped(
            f"not authorized to use the transactional id {transactional_id} (the journal is written in "
            f"transactions): grant WRITE and DESCRIBE on transactional ids with the prefix "
            f"{transactional_id_prefix(config.bridge_id)} to the bridge's principal"
        )
    return delivery_failure(config.journal_topic, error) if is_hard(error) else None


class JournalWriter(TransactionalBatches):
    """Writes batches to the journal in transactions; shared by the ingest's source threads."""

    def __init__(
        self,
        config: JobConfig,
        partitions: int,
        still_active: Callable[[], None] = lambda: None,
        ingest_partition: int | None = 0,
    ) -> None:
        """`partitions`: the journal topic's; `ingest_partition`: whose producer this is (None: the id of
        builds before ingest partitions, to fence it). `still_active` raises (LeadershipLost) when this
        instance no longer holds the lease."""
        self.config = config
        self.partitions = partitions
        self.epoch: Epoch | None = None  # whose journal it is, from `open` on
        settings = transactional_settings(
            producer_config(config.bridge.kafka),
            journal_transactional_id(config.bridge_id, ingest_partition),
            TRANSACTION_TIMEOUT_MS / 1000,
        )
        super().__init__(settings, still_active)

    def warm_up(self, topic: str | None = None) -> None:
        """Connect and learn the journal's metadata now (a standby does, before it holds the lease)."""
        super().warm_up(topic or self.config.journal_topic)

    def open(self, epoch: Epoch | None = None) -> None:
        """Take the journal (fencing every earlier writer) and write `epoch`'s markers. KafkaUnreachable
        when Kafka cannot be reached; the next `write` tries again."""
        if epoch is not None:
            self.epoch = epoch
        super().open()

    def opening_records(self) -> Sequence[Written]:
        """An epoch marker in every journal partition: whose journal it is from here on."""
        assert self.epoch is not None, "write before open"
        written = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
        marker = self.epoch.marker(written)
        return [(self.config.journal_topic, marker, p) for p in range(self.partitions)]

    def hard_failure(self, error: object) -> BridgeStopped | None:
        return hard_failure(error, self.config, self.transactional_id)

    def fenced_out(self) -> Exception:
        return JournalFenced(
            f"another instance of bridge {self.config.bridge_id} took over the journal "
            f"(transactional id {self.transactional_id}): this one stops writing"
        )


def fence_idle_writers(
    config: JobConfig, partitions: int, busy: Collection[int], still_active: Callable[[], None]
) -> None:
    """Take every journal id no producer of this instance opens (the one of builds before ingest
    partitions, those of partitions without sources now), fencing whatever former writer holds it; side
    by side, each costing a round trip to the transaction coordinator or more. KafkaUnreachable when Kafka
    cannot be reached."""
    idle = [None, *(p for p in range(partitions) if p not in busy)]

    def take(ingest_partition: int | None) -> None:
        writer = JournalWriter(config, partitions, still_active, ingest_partition)
        try:
            writer.take()
        finally:
            writer.close()

    with ThreadPoolExecutor(max_workers=min(len(idle), 16), thread_name_prefix="fence") as pool:
        for taken in [pool.submit(take, p) for p in idle]:
            taken.result()  # the first failure, once every attempt is done
