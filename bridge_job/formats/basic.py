"""The `basic` format: only the text of a TextMessage is relayed, as the record value in UTF-8.

JMS -> Kafka drops every JMS header and property; Kafka -> JMS sets none of them (the JMS provider fills
in what it must) and sends the value as a TextMessage to the route's destination. No value is a
TextMessage without text. Bytes and the other JMS message types have no text: they are refused, so the
route's soft-failure policy decides what happens to them.
"""

from __future__ import annotations

from bridge_job.formats import FormatError, KafkaRecord, utf8
from bridge_job.formats.native import ORIGIN_HEADER
from bridge_job.message import BodyType, Destination, JmsMessage


def encode(message: JmsMessage, origin: str | None = None) -> KafkaRecord:
    if message.body_type is not BodyType.TEXT or isinstance(message.body, bytes):
        raise FormatError(f"message type {message.body_type.value}: the basic format relays TextMessage only")
    value = None if message.body is None else utf8(message.body, "value")
    headers = [] if origin is None else [(ORIGIN_HEADER, utf8(origin, "origin"))]
    return KafkaRecord(value=value, headers=headers)


def decode(record: KafkaRecord, destination: Destination | None = None) -> JmsMessage:
    """A TextMessage holding the value; `destination` is the route's, since the record names none."""
    if destination is None:
        raise FormatError("destination: the basic format carries none, and the route names none")
    text = None
    if record.value is not None:
        try:
            text = record.value.decode()
        except UnicodeDecodeError as error:
            raise FormatError(
                f"value byte {error.start}: not UTF-8, so not the text of a TextMessage"
            ) from None
    return JmsMessage(destination=destination, body_type=BodyType.TEXT, body=text)
