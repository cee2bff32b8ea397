"""The pending requests of the message-id convention: entries, expiry, the sweep."""

from __future__ import annotations

import pytest

from bridge_job.formats.journal import pending_topic
from bridge_job.routing.pending import (
    SWEEP_GRACE_MS,
    PendingRequest,
    parse_pending,
    pending_record,
    pending_route,
    stale,
    tombstone,
)

REQUEST = PendingRequest("answers", "c1", deadline_ms=1_000, route="in")


def test_an_entry_is_keyed_by_the_message_id_and_reads_back() -> None:
    record = pending_record("ID:1", REQUEST)
    assert record.key == b"ID:1"
    assert record.value is not None and parse_pending(record.value) == REQUEST
    assert pending_route(record.value) == "in"
    assert tombstone("ID:1").key == b"ID:1" and tombstone("ID:1").value is None


@pytest.mark.parametrize("value", [b"", b"{}", b'{"replyTopic": "a"}', b"[1]", b'{"deadlineMs": "x"}'])
def test_what_is_not_an_entry_says_so(value: bytes) -> None:
    with pytest.raises(ValueError, match="not a pending request"):
        parse_pending(value)
    assert pending_route(value) is None


def test_an_answer_after_the_deadline_is_expired() -> None:
    assert not REQUEST.expired(1_000)
    assert REQUEST.expired(1_001)


def test_the_sweep_takes_entries_long_past_their_deadline_and_unreadable_ones() -> None:
    entries = {
        b"ID:old": pending_record("ID:old", REQUEST).value or b"",
        b"ID:new": pending_record("ID:new", PendingRequest("answers", "c2", 5_000, "in")).value or b"",
        b"ID:bad": b"?",
    }
    assert stale(entries, 1_000 + SWEEP_GRACE_MS) == ["ID:bad"]  # within the grace: kept
    assert sorted(stale(entries, 1_001 + SWEEP_GRACE_MS)) == ["ID:bad", "ID:old"]


def test_the_topic_is_compacted_and_replicated_like_the_journal() -> None:
    spec = pending_topic("b.jms-bridge.pending", 3)
    assert (spec.partitions, spec.replication_factor) == (1, 3)
    assert spec.config["cleanup.policy"] == "compact" and spec.config["min.insync.replicas"] == "2"
    assert pending_topic("p", 1).replication_factor == 1
