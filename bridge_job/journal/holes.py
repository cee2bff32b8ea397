"""Offsets of a journal range that a `read_committed` read returned no record for, and what they are.

One transactional producer writes the journal at a time (`journal_transactional_id`: a successor fences the
former writer), so its transactions follow each other: a transaction's records, then its marker. Read
`read_committed`, a committed transaction leaves one offset without a record (its marker); an aborted one
leaves a run of two or more (its records and its marker). Read `read_uncommitted`, every run of offsets
without a record is one marker long. So a range's holes are told apart by reading them again both ways:

- a hole whose records a `read_committed` read that begins earlier does return: the first read missed
  committed records (a broker that answered one fetch wrongly); the task takes them from the second read;
- a hole that holds records read `read_uncommitted`, each run of offsets without one a single marker: an
  aborted transaction, moved past (what a failover or an aborted ingest write leaves);
- two offsets in a row that hold no record either way: records gone from the log (a retention shorter than
  the bridge's outage, a broker that lost them). The bridge stops, naming them, rather than move past
  messages that JMS saw acknowledged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from confluent_kafka import TopicPartition

from bridge_job.config import JobConfig
from bridge_job.errors import BridgeStopped
from bridge_job.journal.entries import JournalEntry
from bridge_job.journal.reading import journal_consumer, read_range

log = logging.getLogger(__name__)

_GONE = (
    "the messages they held are lost (acknowledged on JMS, never in their topics). The bridge stops rather "
    "than move past them (docs/egress.md, Holes in the journal): check the journal topic's retention.ms "
    "against the longest outage"
)

# How far before a range a second `read_committed` read begins: far enough to begin before the
# transaction that spans a hole at the range's start (a journal transaction is one ingest batch).
REREAD_BACK_OFFSETS = 10_000


def holes(start: int, end: int, offsets: Sequence[int]) -> list[tuple[int, int]]:
    """The runs of two offsets or more in `start`..`end - 1` that returned no record, as (first, last)."""
    found = []
    after = start
    for offset in (*sorted(offsets), end):
        if offset - after >= 2:
            found.append((after, offset - 1))
        after = max(after, offset + 1)
    return found


def gone(found: Sequence[tuple[int, int]], uncommitted: Sequence[int]) -> list[tuple[int, int]]:
    """Of the holes `found` (of a `read_committed` read), the runs of two offsets or more that hold no
    record read `read_uncommitted` either (`uncommitted`: the offsets such a read returned in them)."""
    missing: list[tuple[int, int]] = []
    for first, last in found:
        missing += holes(first, last + 1, [o for o in uncommitted if first <= o <= last])
    return missing


def describe(runs: Sequence[tuple[int, int]]) -> str:
    return ", ".join(f"{first}..{last}" for first, last in runs)


def read_without_holes(
    config: JobConfig, topic: str, partition: int, start: int, end: int, stall_seconds: float
) -> list[JournalEntry]:
    """Every committed journal entry of `topic`/`partition` in `start`..`end - 1`, its holes accounted for
    as the module says; BridgeStopped when records are gone from the log."""
    consumer = journal_consumer(config)
    read = read_range(consumer, topic, partition, start, end, stall_seconds)
    found = holes(start, end, [e.offset for e in read])
    if not found:
        return read
    low, _ = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=stall_seconds)
    earlier = max(low, start - REREAD_BACK_OFFSETS)
    again = [
        e for e in read_range(consumer, topic, partition, earlier, end, stall_seconds) if e.offset >= start
    ]
    if len(again) > len(read):
        log.warning(
            "journal %s/%d offsets %s: a read from %d returned %d committed records a read from %d did not; "
            "taking them (a Kafka broker that answers fetches inconsistently)",
            topic, partition, describe(found), earlier, len(again) - len(read), start,
        )  # fmt: skip
        read, found = again, holes(start, end, [e.offset for e in again])
        if not found:
            return read
    uncommitted = journal_consumer(config, uncommitted=True)
    first, last = found[0][0], found[-1][1]
    present = read_range(uncommitted, topic, partition, first, last + 1, stall_seconds)
    missing = gone(found, [e.offset for e in present])
    if missing:
        raise BridgeStopped(
            f"journal {topic} partition {partition}: offsets {describe(missing)} hold no record, committed "
            f"or aborted: the broker lost them before the bridge wrote them to Kafka: {_GONE}"
        )
    log.debug("journal %s/%d offsets %s: aborted transactions", topic, partition, describe(found))
    return read
