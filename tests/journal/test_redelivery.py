"""Redelivered JMS messages already in the journal are dropped; nothing else is."""

from __future__ import annotations

from bridge_job.formats.journal import JournalEntry
from bridge_job.journal.redelivery import unresolved, without_duplicates
from bridge_job.message import Destination, DestinationKind, JmsMessage

QUEUE = Destination(DestinationKind.QUEUE, "orders")


def entry(message_id: str | None, redelivered: bool = False, at: int = 0) -> JournalEntry:
    journalled = JournalEntry.of(
        JmsMessage(QUEUE, body=f"{message_id}", message_id=message_id, redelivered=redelivered)
    )
    journalled.timestamp_ms = at
    return journalled


def ids(entries: list[JournalEntry]) -> list[str | None]:
    return [e.message_id for e in entries]


def test_a_redelivery_of_an_earlier_entry_is_dropped() -> None:
    entries = [entry("a"), entry("b"), entry("a", redelivered=True), entry("c", redelivered=True)]
    assert ids(without_duplicates(entries, set())) == ["a", "b", "c"]


def test_only_redelivered_entries_are_candidates() -> None:
    # the same id sent twice by a producer, neither copy redelivered: both go
    assert ids(without_duplicates([entry("a"), entry("a")], set())) == ["a", "a"]
    assert ids(without_duplicates([entry("a")], {"a"})) == ["a"]


def test_originals_before_the_range_count() -> None:
    entries = [entry("a", redelivered=True), entry("b", redelivered=True), entry(None, redelivered=True)]
    assert ids(without_duplicates(entries, {"a"})) == ["b", None]


def test_unresolved_lists_redeliveries_whose_original_is_not_in_the_range() -> None:
    entries = [
        entry("a", at=1),
        entry("a", redelivered=True, at=2),  # original just before: resolved here
        entry("b", redelivered=True, at=3),
        entry("b", redelivered=True, at=4),  # a second redelivery: the first time counts
        entry(None, redelivered=True, at=5),  # no id: cannot be matched, never dropped
    ]
    assert unresolved(entries) == {"b": 3}
