"""Hypothesis strategies for JMS messages, and a comparison that treats NaN as equal to NaN.

A choice among kinds (a message's body type, a property's type) is a `one_of` of strategies built once, not
a `flatmap` that builds and validates new strategies for every value drawn: that made hypothesis's own
bookkeeping most of the fuzz tests' time."""

from __future__ import annotations

import dataclasses
import math
import struct
from typing import Any

from hypothesis import strategies as st

from bridge_job.formats import envelope_wire
from bridge_job.message import (
    BodyType,
    DeliveryMode,
    Destination,
    DestinationKind,
    Entries,
    Entry,
    EntryType,
    JmsMessage,
    Property,
    PropertyType,
)

QUEUE = Destination(DestinationKind.QUEUE, "orders")

_identifier_start = st.characters(categories=["L"]) | st.sampled_from("_$")
_identifier_part = st.characters(categories=["L", "Nd"]) | st.sampled_from("_$")
# JMS property names are Java identifiers (unicode letters allowed); JMS reserves the JMS prefix and the
# envelope reads most BRIDGE_* names as JMS headers. ENV, H1... are the envelope's well-known names.
property_names = st.builds(str.__add__, _identifier_start, st.text(_identifier_part, max_size=15)).filter(
    lambda n: not n.startswith("JMS") and n not in envelope_wire.WELL_KNOWN_TYPES
) | st.sampled_from(["ENV", "H1", "H2", "H3", "H4", "ENVIRONMENT"])

_BITS = {PropertyType.BYTE: 8, PropertyType.SHORT: 16, PropertyType.INT: 32, PropertyType.LONG: 64}


def property_values(type_: PropertyType, min_string: int = 0) -> st.SearchStrategy[Property]:
    if type_ is PropertyType.STRING:
        values: st.SearchStrategy[Any] = st.text(min_size=min_string, max_size=40)
    elif type_ is PropertyType.BOOLEAN:
        values = st.booleans()
    elif type_ in _BITS:
        half = 2 ** (_BITS[type_] - 1)
        values = st.integers(-half, half - 1)
    elif type_ is PropertyType.FLOAT:
        values = st.floats(width=32)
    else:
        values = st.floats()
    return values.map(lambda v: Property(type_, v))


def properties(min_string: int = 0, max_size: int = 8) -> st.SearchStrategy[dict[str, Property]]:
    typed = st.one_of(*(property_values(t, min_string) for t in PropertyType))
    return st.dictionaries(property_names, typed, max_size=max_size)


destinations = st.builds(Destination, st.sampled_from(DestinationKind), st.text(min_size=1, max_size=30))


def bodies(body_type: BodyType) -> st.SearchStrategy[str | bytes | None]:
    if body_type is BodyType.TEXT:
        return st.none() | st.text(max_size=300)
    if body_type is BodyType.BYTES:
        return st.none() | st.binary(max_size=300)
    return st.none()


def entry_values(type_: EntryType) -> st.SearchStrategy[Entry]:
    if type_ is EntryType.NULL:
        return st.just(Entry(type_, None))
    if type_ is EntryType.BYTES:
        return st.binary(max_size=40).map(lambda b: Entry(type_, b))
    if type_ is EntryType.CHAR:  # a UTF-16 unit that is no lone surrogate (UTF-8 cannot carry one)
        return st.characters(max_codepoint=0xFFFF, exclude_categories=["Cs"]).map(lambda c: Entry(type_, c))
    return property_values(PropertyType(type_.value)).map(lambda p: Entry(type_, p.value))


def entries(body_type: BodyType) -> st.SearchStrategy[Entries | None]:
    """A map's entries or a stream's items of any types; None for the other message types."""
    entry = st.one_of(*map(entry_values, EntryType))
    if body_type is BodyType.MAP:
        return st.dictionaries(st.text(max_size=12), entry, max_size=6)
    if body_type is BodyType.STREAM:
        return st.lists(entry, max_size=6).map(tuple)
    return st.none()


def messages(
    body_types: tuple[BodyType, ...] = tuple(BodyType),
    min_string: int = 0,
    max_properties: int = 8,
) -> st.SearchStrategy[JmsMessage]:
    """Any message; `min_string=1` for the envelope, which has no empty strings."""
    text = st.text(min_size=min_string, max_size=40)
    longs = st.integers(-(2**63), 2**63 - 1)
    props = properties(min_string, max_properties)
    return st.one_of(
        *(
            st.builds(
                JmsMessage,
                destination=destinations,
                body_type=st.just(body_type),
                body=bodies(body_type),
                entries=entries(body_type),
                message_id=st.none() | st.text(max_size=40),
                correlation_id=st.none() | text,
                reply_to=st.none() | destinations,
                type=st.none() | text,
                priority=st.integers(0, 9),
                delivery_mode=st.sampled_from(DeliveryMode),
                expiration=st.just(0) | longs,
                timestamp=st.just(0) | longs,
                redelivered=st.booleans(),
                properties=props,
            )
            for body_type in body_types
        )
    )


def canonical(message: JmsMessage) -> tuple[JmsMessage, dict[str, tuple[PropertyType, Any]], Any]:
    """What to compare: NaN equals NaN, and 0.0 differs from -0.0; a map's entries in any order."""

    def key(value: Any) -> Any:
        if isinstance(value, float):
            return "nan" if math.isnan(value) else struct.pack(">d", value)
        return value

    props = {name: (p.type, key(p.value)) for name, p in message.properties.items()}
    entries: Any = message.entries
    if isinstance(entries, dict):
        entries = {name: (e.type, key(e.value)) for name, e in entries.items()}
    elif isinstance(entries, tuple):
        entries = tuple((e.type, key(e.value)) for e in entries)
    return dataclasses.replace(message, properties={}, entries=None), props, entries
