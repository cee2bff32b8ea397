"""Poison messages at ingest: a JMS message that cannot become a journal record.

The ingest writes every message to the journal in the `native` encoding. Three things about one message
can make that impossible, and none of them is the broker's fault, so none may stop the bridge by itself:

- `InvalidText`: a header, property or text body holds a lone UTF-16 surrogate (a Java string may, UTF-8
  cannot carry one);
- `UnmappableProperty`: a property that the `native` encoding cannot name (a typed property whose name
  holds `,` or `=`, a property named like a JMS header);
- `MessageTooLarge`: the journal record is larger than the journal topic or the producer takes.

A fourth is the broker's client: `UnreadableMessage`, a message whose body or a property the JMS client
throws on reading (an OpenWire producer of another language that wrote a text Java cannot decode). Its
batch is rolled back once (a connection that failed mid-read is no broken message: ingest.py); when it
comes back redelivered and still cannot be read, it is poison, and the queue moves on past it instead of
rolling the batch back for ever.

They are soft failures under the bridge's `routing.onSoftFailure` (routes come later, in the egress).
A dead letter written at ingest keeps what can be kept: every header and property (lone surrogates
replaced by U+FFFD, an unmappable property as a string or, named like a header, left out), the body when
it is valid and fits (else none, with its size in `jmsbridge.deadletter.bodySize`), and the same
reason headers as an egress dead letter.
"""

from __future__ import annotations

import dataclasses
import re

from bridge_job.formats import FormatError, KafkaRecord, native
from bridge_job.formats.journal import journal_record
from bridge_job.message import HEADER_NAMES, Destination, JmsMessage, Property, PropertyType, is_utf8_text
from bridge_job.routing.failures import (
    SoftFailure,
    SoftFailureReason,
    dead_letter_record,
    record_size,
    too_large,
    unreadable,
)

_SURROGATE = re.compile("[\ud800-\udfff]")  # in a Python str, a surrogate code point is always a lone one


def describe(message: JmsMessage) -> str:
    message_id = _clean(message.message_id or "(no JMSMessageID)")
    return f"message {message_id} from {_clean(message.destination.uri())}"


def journal_or_failure(message: JmsMessage, limit: int, journal: str) -> KafkaRecord | SoftFailure:
    """The journal record of `message`, or why it cannot have one (`limit`: what `journal` takes)."""
    failure = unreadable(message)
    if failure is not None:
        return failure
    try:
        record = journal_record(message)
    except FormatError as error:
        where = message.invalid_text()
        if where is not None:
            return SoftFailure(
                SoftFailureReason.INVALID_TEXT,
                f"{where} holds a lone UTF-16 surrogate, which UTF-8 (and so Kafka) cannot carry",
            )
        return SoftFailure(SoftFailureReason.UNMAPPABLE_PROPERTY, str(error))
    size = record_size(record)
    if size > limit:
        return too_large(size, limit, f"journal topic {journal}")
    return record


def ingest_dead_letter(message: JmsMessage, failure: SoftFailure, limit: int) -> KafkaRecord:
    """The dead letter of a message that has no journal record (`limit`: what the dead-letter topic takes)."""
    body_size = _body_size(message)
    body = message.body
    keep_body = failure.reason is not SoftFailureReason.MESSAGE_TOO_LARGE and (
        not isinstance(body, str) or is_utf8_text(body)
    )
    kept = _cleaned(message, keep_body)
    try:
        record = native.encode(kept)
    except FormatError:  # the property check of `_cleaned` mirrors native's; never trust a mirror
        kept = dataclasses.replace(kept, properties={})
        record = native.encode(kept)
    key = None if kept.message_id is None else kept.message_id.encode()
    original = KafkaRecord(value=record.value, headers=record.headers, key=key)
    source = message.destination.uri()
    return dead_letter_record(
        original, failure, source, keep_body=keep_body, limit=limit, body_size=body_size
    )


def _clean(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def _optional(text: str | None) -> str | None:
    return None if text is None else _clean(text)


def _body_size(message: JmsMessage) -> int:
    body = message.body
    if isinstance(body, str):
        return len(body.encode("utf-8", "surrogatepass"))
    return len(body or b"")


def _cleaned(message: JmsMessage, keep_body: bool) -> JmsMessage:
    properties: dict[str, Property] = {}
    for name, prop in message.properties.items():
        if name in HEADER_NAMES:
            continue  # the header of that name is kept; the property cannot be told apart from it
        value = _clean(prop.value) if isinstance(prop.value, str) else prop.value
        typed_name_ok = name and "," not in name and "=" not in name
        if prop.type is not PropertyType.STRING and not typed_name_ok:
            properties[_clean(name)] = Property.string(native.render_value(value))
        else:
            properties[_clean(name)] = Property(prop.type, value)
    return dataclasses.replace(
        message,
        destination=Destination(message.destination.kind, _clean(message.destination.name)),
        reply_to=None
        if message.reply_to is None
        else Destination(message.reply_to.kind, _clean(message.reply_to.name)),
        message_id=_optional(message.message_id),
        correlation_id=_optional(message.correlation_id),
        type=_optional(message.type),
        body=message.body if keep_body else None,
        properties=properties,
    )
