"""The egress side of the requests kept pending for `messageId` answers (routing/pending.py): this
process's copy of the pending-request topic, and which tombstones a range writes.

An answered (or expired) request's tombstone goes with the range that routed its answer when that range
is written in a transaction (`exactlyOnce`): a range written is never routed again. With `atLeastOnce`
a range is routed again after a crash, and its answers must find their requests then: their tombstones
wait in this process for a later range of the same journal partition, which Spark plans only once the
earlier batch is committed. A process that ends first loses them; the entries then go with the sweep,
`SWEEP_GRACE_MS` after their deadline.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from bridge_job.config import JobConfig, journal_reader_group
from bridge_job.egress.converting import PendingLookup
from bridge_job.kafka.compacted import CompactedTopic
from bridge_job.kafka.writing import Addressed
from bridge_job.routing.pending import stale, tombstone

SWEEP_EVERY_MS = 60_000  # a sweep reads every entry the process holds: not on every batch

_tables: dict[str, CompactedTopic] = {}  # per pending topic
_swept_ms: dict[str, int] = {}
_waiting: dict[tuple[str, int], list[tuple[int, list[Addressed]]]] = {}  # (topic, journal partition)


def pending_table(config: JobConfig) -> CompactedTopic:
    table = _tables.get(config.pending_topic)
    if table is None:
        group = journal_reader_group(config.bridge_id)
        patience = config.bridge.outages.patience_seconds
        table = _tables[config.pending_topic] = CompactedTopic(
            config.bridge.kafka, config.pending_topic, group, patience
        )
    return table


def lookup(config: JobConfig) -> PendingLookup | None:
    if not config.keeps_pending_requests:
        return None
    table = pending_table(config)
    return lambda message_id: table.get(message_id.encode())


def tombstones(
    config: JobConfig, partition: int, start: int, end: int, routed: Sequence[Addressed], transactional: bool
) -> list[Addressed]:
    """What a range of journal partition `partition` writes to the pending-request topic: the tombstones of
    the requests it answered (`routed`) or those of earlier ranges, and the sweep's."""
    if not config.keeps_pending_requests:
        return []
    if transactional:
        now = list(routed)
    else:
        key = (config.pending_topic, partition)
        waiting = _waiting.get(key, [])
        now = [record for until, records in waiting if until <= start for record in records]
        _waiting[key] = [(until, records) for until, records in waiting if until > start]
        if routed:
            _waiting[key].append((end, list(routed)))
    return now + sweep(config)


def sweep(config: JobConfig) -> list[Addressed]:
    """Tombstones for the pending requests this process knows that are long past their deadline."""
    now_ms = int(time.time() * 1000)
    if now_ms - _swept_ms.get(config.pending_topic, 0) < SWEEP_EVERY_MS:
        return []
    _swept_ms[config.pending_topic] = now_ms
    table = pending_table(config)
    return [(config.pending_topic, tombstone(i)) for i in stale(table.snapshot(), now_ms)]


def written(config: JobConfig, records: Sequence[Addressed]) -> None:
    """Tombstoned requests are not found again before this process reads their tombstones."""
    if config.keeps_pending_requests:
        pending_table(config).forget(r.key or b"" for t, r in records if t == config.pending_topic)
