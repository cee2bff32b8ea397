"""Soft failures: what cannot be done for one message, and the dead letter that says so.

The same vocabulary for every flow: the ingest (a poison message), the egress (no route, no key, a record
too large) and the ingress (no destination, a send refused). A flow handles a soft failure by its route's
policy, else the bridge's (`JobConfig.soft_failure_policy`, the one rule), through `dispose`: `fail` stops
the bridge, `skip` drops the message with a log line, `deadLetter` publishes it to the dead-letter topic
as `dead_letter_record` makes it, with headers saying why and where it came from.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TypeVar

from bridge_job.config import JobConfig, Route, SoftFailurePolicy
from bridge_job.formats import KafkaRecord
from bridge_job.message import BodyType, JmsMessage

T = TypeVar("T")

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


def dispose(
    config: JobConfig,
    route: Route | None,
    fail: Callable[[], T],
    skip: Callable[[], T],
    dead_letter: Callable[[str], T],
) -> T:
    """What a flow does with a message that failed softly on `route` (None: no route took it), by the
    policy that applies (`JobConfig.soft_failure_policy`): `dead_letter(topic)` is given the bridge's
    dead-letter topic, which the config requires for that policy."""
    policy = config.soft_failure_policy(route)
    if policy is SoftFailurePolicy.SKIP:
        return skip()
    if policy is SoftFailurePolicy.DEAD_LETTER:
        topic = config.bridge.routing.dead_letter_topic
        assert topic is not None  # JobConfig requires it for the policy
        return dead_letter(topic)
    return fail()


def dead_letter_record(
    original: KafkaRecord,
    failure: SoftFailure,
    source: str,
    *,
    journal: str | None = None,
    offset: int | None = None,
    route: str | None = None,
    keep_body: bool = True,
    limit: int | None = None,
    body_size: int | None = None,
) -> KafkaRecord:
    """The dead letter of every flow: `original`'s body, key and headers plus `dead_letter_headers`.
    Without the body, its size in BODY_SIZE_HEADER instead, when the message was too large, when
    `keep_body` says so, or when the letter would be over `limit` bytes (what the dead-letter topic
    takes). `body_size`: the body's size when `original` no longer holds it."""
    headers = [
        *original.headers,
        *dead_letter_headers(failure, source, journal=journal, offset=offset, route=route),
    ]
    keep_body = keep_body and failure.reason is not SoftFailureReason.MESSAGE_TOO_LARGE
    letter = KafkaRecord(value=original.value if keep_body else None, headers=headers, key=original.key)
    if keep_body and limit is not None and record_size(letter) > limit:
        keep_body, letter = False, KafkaRecord(value=None, headers=headers, key=original.key)
    if not keep_body:
        size = len(original.value or b"") if body_size is None else body_size
        letter.headers.append((BODY_SIZE_HEADER, str(size).encode()))
    return letter
