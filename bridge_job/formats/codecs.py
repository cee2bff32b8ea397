"""One interface over the message formats: what the job calls for a route's `format`.

`encode(message, origin)` turns a JMS message into a Kafka record; `origin` is the bridge id, written as
the `jmsbridge.origin` Kafka header (outside the payload) so that the bridge never feeds its own output
back to JMS. `decode(record, destination)` turns a record into a JMS message; `destination` is the
route's, used when the record names none. Both raise FormatError for what they cannot read or represent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bridge_job.config import Format
from bridge_job.formats import KafkaRecord, avro, basic, envelope, json_schema, jsonmode, native
from bridge_job.formats.native import ORIGIN_HEADER
from bridge_job.formats.registry_wire import SchemaIds, SchemaLookup
from bridge_job.message import Destination, JmsMessage


@dataclass(frozen=True, slots=True)
class Codec:
    format: Format
    encode: Callable[[JmsMessage, str | None], KafkaRecord]
    decode: Callable[[KafkaRecord, Destination | None], JmsMessage]


_CODECS = {
    Format.NATIVE: Codec(Format.NATIVE, native.encode, native.decode),
    Format.BASIC: Codec(Format.BASIC, basic.encode, basic.decode),
    Format.JSON: Codec(Format.JSON, jsonmode.encode, jsonmode.decode),
    Format.ENVELOPE: Codec(Format.ENVELOPE, envelope.encode, envelope.decode),
}


def codec(fmt: Format) -> Codec:
    return _CODECS[fmt]


@dataclass(frozen=True, slots=True)
class RegisteredCodec:
    """A format whose records name their schema in the schema registry: writing takes the schemas' ids
    for the topic, reading finds the writer's schema by the id the record names."""

    format: Format
    encode: Callable[[JmsMessage, str | None, SchemaIds], KafkaRecord]
    decode: Callable[[KafkaRecord, Destination | None, SchemaLookup], JmsMessage]


_REGISTERED = {
    Format.AVRO: RegisteredCodec(Format.AVRO, avro.encode, avro.decode),
    Format.JSON_SCHEMA: RegisteredCodec(Format.JSON_SCHEMA, json_schema.encode, json_schema.decode),
}


def registered(fmt: Format) -> RegisteredCodec:
    return _REGISTERED[fmt]


def origin(record: KafkaRecord) -> str | None:
    """The bridge that wrote a record, whatever its format (None for other producers' records)."""
    raw = record.header(ORIGIN_HEADER)
    return None if raw is None else raw.decode(errors="replace")
