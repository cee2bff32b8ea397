"""One JMS message of every type the bridge carries, with a property of every type and map entries of the
types only entries have (char, bytes): what a format must carry whole."""

from __future__ import annotations

import dataclasses

from bridge_job.message import BodyType, Destination, Entry, EntryType, JmsMessage, Property, PropertyType

PROPERTIES = {
    "region": Property.string("emea"),
    "count": Property(PropertyType.INT, 3),
    "tiny": Property(PropertyType.BYTE, -128),
    "small": Property(PropertyType.SHORT, 32767),
    "big": Property(PropertyType.LONG, 2**40),
    "ratio": Property(PropertyType.FLOAT, 1.5),
    "price": Property(PropertyType.DOUBLE, 0.1),
    "express": Property(PropertyType.BOOLEAN, True),
}


def every_type(destination: Destination, tag: str) -> list[JmsMessage]:
    """A text, a bytes, a map and a stream message to `destination`, each holding `tag`."""
    entries = {
        "sku": Entry(EntryType.STRING, "A-1"),
        "initial": Entry(EntryType.CHAR, "A"),
        "image": Entry(EntryType.BYTES, b"\x89PNG"),
        "qty": Entry(EntryType.INT, 5),
        "tag": Entry(EntryType.STRING, tag),
    }
    stream = (Entry(EntryType.LONG, 1), Entry(EntryType.STRING, tag))
    return [
        JmsMessage(
            destination, body=f"héllo {tag}", type="order", correlation_id=f"c-{tag}", properties=PROPERTIES
        ),
        JmsMessage(destination, BodyType.BYTES, body=b"\x00\x01\xff" + tag.encode(), priority=7),
        JmsMessage(destination, BodyType.MAP, entries=entries),
        JmsMessage(destination, BodyType.STREAM, entries=stream),
    ]


def with_headers(messages: list[JmsMessage]) -> list[JmsMessage]:
    """The same messages as a broker hands them on: ids, timestamps and the other headers set."""
    return [
        dataclasses.replace(
            message,
            message_id=f"ID:{index}",
            reply_to=Destination.parse("topic://replies"),
            timestamp=1_700_000_000_000 + index,
            expiration=1_700_000_060_000,
            redelivered=index % 2 == 1,
        )
        for index, message in enumerate(messages)
    ]
