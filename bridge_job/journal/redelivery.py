"""Dropping JMS redeliveries that the journal already holds.

The ingest commits a JMS transaction only after the journal acknowledged its messages. When the commit
does not happen (the job crashed, the connection broke, a partial journal write was rolled back), the
broker delivers those messages again, flagged `JMSRedelivered=true`, with the same JMSMessageID: the
journal may then hold a message twice. The copy always comes later than the original and in the same
journal partition (one partition per JMS destination), so egress needs to look only at redelivered
entries and only backwards in their own partition, within `spark.dedupWindowSeconds`.

The journal never changes, so the verdict for a replayed batch is the same as the first time. A message
sent twice by its producer with the same JMSMessageID, but not redelivered, is not a duplicate here.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from bridge_job.formats.journal import JournalEntry


def unresolved(entries: Sequence[JournalEntry]) -> dict[str, int]:
    """Redelivered message ids whose original is not earlier in `entries`: {id: timestamp ms of the
    first redelivery}. Their originals, if any, are before this range in the journal."""
    seen: set[str] = set()
    wanted: dict[str, int] = {}
    for entry in entries:
        message_id = entry.message_id
        if message_id is None:
            continue
        if entry.redelivered and message_id not in seen:
            wanted.setdefault(message_id, entry.timestamp_ms)
        seen.add(message_id)
    return wanted


def without_duplicates(entries: Sequence[JournalEntry], earlier: Collection[str]) -> list[JournalEntry]:
    """`entries` less every redelivered one whose id is in `earlier` or earlier in `entries`."""
    if not earlier and not any(e.redelivered for e in entries):
        return list(entries)
    seen = set(earlier)
    kept = []
    for entry in entries:
        message_id = entry.message_id
        if message_id is not None:
            if entry.redelivered and message_id in seen:
                continue
            seen.add(message_id)
        kept.append(entry)
    return kept
