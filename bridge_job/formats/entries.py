"""MapMessage and StreamMessage bodies as JSON with their types kept: a JSON object of a map's entries, a
JSON array of a stream's items (docs/formats.md, "Map and Stream messages").

The JSON is plain, for consumers that know nothing of the bridge: strings, booleans, numbers and null as
they are; bytes in base64 (RFC 4648, with padding); a char as a one-character string; non-finite floating
point as the strings "NaN", "Infinity" and "-Infinity". What JSON cannot tell apart is said in `types`, a
JSON object from an entry's name (a stream item's index, in decimal) to its JMS type, the way
`jmsbridge.types` keeps property types: every entry that is not a string, a boolean, null, a long (a
number without fraction or exponent) or a double (any other number) has one: byte, short, char, int,
float, bytes, and a non-finite double. Without `types` (another producer's JSON) entries have those
natural types. Objects and arrays inside are refused: JMS has no nested entries.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from bridge_job.formats import FormatError
from bridge_job.formats.json_values import floating, kind, written
from bridge_job.message import BodyType, Entries, Entry, EntryType, EntryValue, to_float32


def to_json(entries: Entries) -> tuple[Any, dict[str, str]]:
    """The JSON value (object or array) of a map's or a stream's entries, and its `types`."""
    pairs = entries.items() if isinstance(entries, dict) else ((str(i), e) for i, e in enumerate(entries))
    values: dict[str, Any] = {}
    types: dict[str, str] = {}
    for key, entry in pairs:
        value = entry.value
        values[key] = base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else written(value)
        if _needs_type(entry, values[key]):
            types[key] = entry.type.value
    return (values if isinstance(entries, dict) else list(values.values())), types


def _needs_type(entry: Entry, written: Any) -> bool:
    """Whether the JSON written for `entry` would read back as another type without a `types` entry."""
    if entry.type is EntryType.DOUBLE:
        return isinstance(written, str)  # non-finite, written as text
    return entry.type not in (EntryType.STRING, EntryType.BOOLEAN, EntryType.NULL, EntryType.LONG)


def from_json(value: Any, types: Any, body_type: BodyType, where: str) -> Entries:
    """The entries a JSON value holds for a MapMessage (an object) or a StreamMessage (an array), with
    `types` (None when there are none); FormatError names the offending entry under `where`."""
    if types is None:
        types = {}
    if not isinstance(types, dict) or not all(isinstance(t, str) for t in types.values()):
        raise FormatError(f"{where} types: expected a JSON object of type names")
    if body_type is BodyType.MAP:
        if not isinstance(value, dict):
            raise FormatError(f"{where}: a MapMessage's entries are a JSON object, not {kind(value)}")
        _check_keys(types, value, where)
        return {
            name: _entry(item, types.get(name), f"{where} entry {name!r}") for name, item in value.items()
        }
    if not isinstance(value, list):
        raise FormatError(f"{where}: a StreamMessage's items are a JSON array, not {kind(value)}")
    _check_keys(types, {str(i): None for i in range(len(value))}, where)
    return tuple(_entry(item, types.get(str(i)), f"{where} item {i}") for i, item in enumerate(value))


def _check_keys(types: Mapping[str, str], entries: Mapping[str, Any], where: str) -> None:
    for key in types:
        if key not in entries:
            raise FormatError(f"{where} types: {key!r} names no entry")


def _entry(item: Any, declared: str | None, where: str) -> Entry:
    if declared is None:
        type_ = _natural_type(item, where)
    else:
        try:
            type_ = EntryType(declared)
        except ValueError:
            names = ", ".join(t.value for t in EntryType)
            raise FormatError(f"{where}: unknown type {declared!r}; expected one of {names}") from None
    value = _value(item, type_, where)
    try:
        return Entry(type_, value)
    except ValueError as error:
        raise FormatError(f"{where}: {error}") from None


def _natural_type(item: Any, where: str) -> EntryType:
    if item is None:
        return EntryType.NULL
    if isinstance(item, bool):
        return EntryType.BOOLEAN
    if isinstance(item, int):
        return EntryType.LONG
    if isinstance(item, float):
        return EntryType.DOUBLE
    if isinstance(item, str):
        return EntryType.STRING
    raise FormatError(f"{where}: {kind(item)} inside a map or stream (JMS has no nested entries)")


def _value(item: Any, type_: EntryType, where: str) -> EntryValue:
    """The Python value of a JSON item of a declared type (Entry checks that it fits the type)."""
    if type_ is EntryType.BYTES:
        if not isinstance(item, str):
            raise FormatError(f"{where}: {kind(item)} is not base64 text")
        try:
            return base64.b64decode(item, validate=True)
        except binascii.Error:
            raise FormatError(f"{where}: {item[:40]!r} is not base64 (RFC 4648, with padding)") from None
    if type_ is EntryType.DOUBLE:
        return floating(item, where)
    if type_ is EntryType.FLOAT:
        try:
            return to_float32(floating(item, where))  # what Java's (float) cast gives
        except OverflowError:
            raise FormatError(f"{where}: {item!r} is out of range for a float") from None
    if type_ in (EntryType.BYTE, EntryType.SHORT, EntryType.INT, EntryType.LONG) and isinstance(item, float):
        raise FormatError(f"{where}: {item!r} is not an integer")
    value: EntryValue = item
    return value
