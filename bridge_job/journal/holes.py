"""Offsets of a journal range that a `read_committed` read returned no record for.

Read `read_committed`, a committed transaction leaves one offset without a record (its marker) and an
aborted one two or more (its records, if any reached the partition, and its marker); so does a transaction
aborted before any of its records arrived, next to the previous marker. None of these is a loss, and a
correct broker gives the same answer whatever offset a read begins at. A broker that does not (one that
applied an aborted transaction to later records of the same producer, as a Kafka-protocol imitation was
seen to) hides committed records from a read that begins past the abort. So a range with a run of two
offsets or more without a record is read again, `read_committed` from before the range: records that
second read returns are taken, with a warning naming the offsets, instead of being stepped over.

Records gone from the log are not holes: offsets the partition no longer holds (retention, records
deleted) make the read itself stop the bridge (kafka/reading.py, `auto.offset.reset=error`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bridge_job.config import JobConfig
from bridge_job.formats.journal import JournalEntry
from bridge_job.journal.reading import journal_consumer, read_range
from bridge_job.kafka.reading import watermarks

log = logging.getLogger(__name__)


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


def describe(runs: Sequence[tuple[int, int]]) -> str:
    return ", ".join(f"{first}..{last}" for first, last in runs)


def read_without_holes(
    config: JobConfig, topic: str, partition: int, start: int, end: int, stall_seconds: float
) -> list[JournalEntry]:
    """Every committed journal entry of `topic`/`partition` in `start`..`end - 1`, its holes accounted for
    as the module says."""
    consumer = journal_consumer(config)
    read = read_range(consumer, topic, partition, start, end, stall_seconds)
    found = holes(start, end, [e.offset for e in read])
    if not found:
        return read
    low, _ = watermarks(consumer, topic, partition, stall_seconds)
    earlier = max(low, start - REREAD_BACK_OFFSETS)
    if earlier == start:
        return read  # the same read again would answer the same
    again = [
        e for e in read_range(consumer, topic, partition, earlier, end, stall_seconds) if e.offset >= start
    ]
    if len(again) > len(read):
        log.warning(
            "journal %s/%d offsets %s: a read from %d returned %d committed records a read from %d did not; "
            "taking them (a Kafka broker that answers fetches inconsistently)",
            topic, partition, describe(found), earlier, len(again) - len(read), start,
        )  # fmt: skip
        return again
    return read
