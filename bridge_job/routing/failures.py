"""Soft failures: what cannot be done for one message, and the dead letter that says so.

The same vocabulary for every flow: the ingest (a poison message), the egress (no route, no key, a record
too large) and the ingress (no destination, a send refused). A flow handles a soft failure by its route's
policy, else the bridge's (`JobConfig.soft_failure_policy`, the one rule): `fail` stops the bridge, `skip`
drops the message with a log line, `deadLetter` publishes it to the dead-letter topic with headers saying
why and where it came from.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass

from bridge_job.formats import KafkaRecord
from bridge_job.message import BodyType, JmsMessage

DEAD_LETTER_PREFIX = "jmsbridge.deadletter."


BODY_SIZE_HEADER = DEAD_LETTER_PREFIX + "bodySize"  # a dead letter without its body: how large it was


class SoftFailureReason(enum.StrEnum):
    NO_ROUTE = "NoRoute"
    NO_KEY = "NoKey"
    INVALID_KEY = "InvalidKey"
    UNSUPPORTED_MESSAGE_TYPE = "UnsupportedMessageType"
    # an ObjectMessage: its body is Java serialization, which the bridge never deserializes (docs/jms.md)
    OBJECT_MESSAGE = "ObjectMessageRefused"
    UNREADABLE_MESSAGE = "UnreadableMessage"  # the JMS client throws reading its body or a property
    CONVERSION_FAILED = "ConversionFailed"
    MALFORMED_JOURNAL_RECORD = "MalformedJournalRecord"
    MESSAGE_TOO_LARGE = "MessageTooLarge"
    INVALID_TEXT = "InvalidText"
    UNMAPPABLE_PROPERTY = "UnmappableProperty"
    NO_DESTINATION = "NoDestination"  # kafkaToJms: the header naming the destination is missing or bad
    # fromHeader: the header names a destination outside jmsDestination.allowed, or several at once
    DESTINATION_NOT_ALLOWED = "DestinationNotAllowed"
    SEND_FAILED = "SendFailed"  # kafkaToJms: the JMS provider refused the message
    REPLY_TOPIC_REFUSED = "ReplyTopicRefused"  # kafkaToJms: a request names a topic its route does not list
    REPLY_EXPIRED = "ReplyExpired"  # an answer to a `messageId` request after its deadline
    UNKNOWN_REQUEST = "UnknownRequest"  # an answer naming no pending `messageId` request


@dataclass(frozen=True, slots=True)
class SoftFailure(Exception):
    reason: SoftFailureReason
    error: str


def unreadable(message: JmsMessage) -> SoftFailure | None:
    """The soft failure for a message the JMS client could not wholly read; None when it could."""
    if message.unreadable is None:
        return None
    reason = SoftFailureReason.UNREADABLE_MESSAGE
    return SoftFailure(reason, f"the JMS client cannot read {message.unreadable}")


def not_carried(body_type: BodyType, carried: Collection[BodyType]) -> SoftFailure | None:
    """The soft failure for a message of a type a flow does not carry; None when it carries it."""
    if body_type in carried:
        return None
    if body_type is BodyType.OBJECT:
        return SoftFailure(
            SoftFailureReason.OBJECT_MESSAGE,
            "an ObjectMessage is never deserialized (Java serialization runs the sender's classes): send "
            "the data as a TextMessage, BytesMessage or MapMessage",
        )
    names = ", ".join(t.value for t in carried if t is not BodyType.MESSAGE)
    return SoftFailure(
        SoftFailureReason.UNSUPPORTED_MESSAGE_TYPE, f"{body_type.value} is not carried (only {names})"
    )


RECORD_OVERHEAD = 128  # a v2 record batch header (61 bytes) and one record's varints, generously


HEADER_OVERHEAD = 10  # the two varints of a header


Limits = Callable[[str], int]  # the largest record a topic takes, in bytes


def no_limits(topic: str) -> int:
    return sys.maxsize


def record_size(record: KafkaRecord) -> int:
    """An upper bound on the bytes `record` takes in a record batch of its own: one that fits a topic's
    limit is never refused for size by the producer or the broker."""
    size = RECORD_OVERHEAD + len(record.key or b"") + len(record.value or b"")
    for name, value in record.headers:
        size += HEADER_OVERHEAD + len(name.encode("utf-8", "replace")) + len(value)
    return size


def too_large(size: int, limit: int, what: str) -> SoftFailure:
    return SoftFailure(
        SoftFailureReason.MESSAGE_TOO_LARGE,
        f"{size} bytes are over the {limit} bytes {what} takes (the smaller of the topic's max.message.bytes "
        "and the producer's message.max.bytes; docs/egress.md, Size limits)",
    )


def dead_letter_headers(
    failure: SoftFailure,
    source: str,
    *,
    journal: str | None = None,
    offset: int | None = None,
    route: str | None = None,
) -> list[tuple[str, bytes]]:
    """The headers a dead letter of every flow adds: why the message was dead-lettered, where it came from
    (`source`: `queue://NAME` for a JMS message, `topic/partition` for a Kafka record), and where known its
    journal partition (`journal`: `topic/partition`), its offset there or in its topic, and its route."""
    headers = [
        (DEAD_LETTER_PREFIX + "reason", failure.reason.value.encode()),
        (DEAD_LETTER_PREFIX + "error", failure.error.encode("utf-8", "replace")),
        (DEAD_LETTER_PREFIX + "source", source.encode("utf-8", "replace")),
    ]
    if journal is not None:
        headers.append((DEAD_LETTER_PREFIX + "journal", journal.encode()))
    if offset is not None:
        headers.append((DEAD_LETTER_PREFIX + "offset", str(offset).encode()))
    if route is not None:
        headers.append((DEAD_LETTER_PREFIX + "route", route.encode()))
    return headers
