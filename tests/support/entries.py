"""Map and Stream message bodies with an entry of every JMS type, edge values included, and a comparison
that takes NaN as equal to itself (what the tests of every layer round-trip)."""

from __future__ import annotations

import math

from bridge_job.message import Entries, Entry, EntryType

# Characters inside the Basic Multilingual Plane only: ActiveMQ Classic's OpenWire writes strings as
# CESU-8 and reads them as UTF-8 (docs/jms.md, provider notes).
EVERY_ENTRY: dict[str, Entry] = {
    "string": Entry(EntryType.STRING, "héllo ✓ 中文"),
    "empty string": Entry(EntryType.STRING, ""),
    "true": Entry(EntryType.BOOLEAN, True),
    "byte": Entry(EntryType.BYTE, -128),
    "short": Entry(EntryType.SHORT, 32767),
    "char": Entry(EntryType.CHAR, "Ω"),
    "int": Entry(EntryType.INT, -(2**31)),
    "long": Entry(EntryType.LONG, 2**63 - 1),
    "float": Entry(EntryType.FLOAT, 1.5),
    "float nan": Entry(EntryType.FLOAT, math.nan),
    "double": Entry(EntryType.DOUBLE, 0.1),
    "double -inf": Entry(EntryType.DOUBLE, -math.inf),
    "whole double": Entry(EntryType.DOUBLE, 2.0),
    "bytes": Entry(EntryType.BYTES, bytes(range(256))),
    "no bytes": Entry(EntryType.BYTES, b""),
    "null": Entry(EntryType.NULL, None),
    "a=b, c": Entry(EntryType.INT, 7),  # a name JMS allows and a header list could not hold
}
EVERY_ITEM: tuple[Entry, ...] = tuple(EVERY_ENTRY.values())


def same_entries(a: Entries | None, b: Entries | None) -> bool:
    """Equal entries (a map's in any order), NaN equal to NaN."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_entry(a[name], b[name]) for name in a)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_entry(x, y) for x, y in zip(a, b, strict=True))
    return a is None and b is None


def _same_entry(x: Entry, y: Entry) -> bool:
    return x.type is y.type and _same(x.value, y.value)


def _same(x: object, y: object) -> bool:
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x):
        return math.isnan(y)
    return x == y and type(x) is type(y)
