"""Egress conversion: a journal entry becomes a Kafka record, a dead letter, a skip or a stop.

This is the pure heart of JMS -> Kafka: route the message (first match wins), take the key (a configured
header or property, default JMSMessageID), convert the body and headers in the route's format. What
cannot be done for this one message is a soft failure, handled by the route's policy (else the
bridge's): `fail` stops the bridge, `skip` drops the message with a log line, `deadLetter` publishes the
original record to the dead-letter topic with headers saying why and where it came from.

A record larger than its topic takes (`limit`, learned by the caller: record_limits.py) is a soft
failure too (`MessageTooLarge`); its dead letter keeps headers and properties but not the body, whose
size it records.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable
from dataclasses import dataclass

from bridge_job import replies
from bridge_job.config import Format, JobConfig, Route, SoftFailurePolicy
from bridge_job.formats import FormatError, KafkaRecord, native
from bridge_job.formats.codecs import codec
from bridge_job.formats.native import ORIGIN_HEADER
from bridge_job.journal import JournalEntry
from bridge_job.message import BodyType, PropertyType
from bridge_job.routing import RouteTable

DEAD_LETTER_PREFIX = "jmsbridge.deadletter."
BODY_SIZE_HEADER = DEAD_LETTER_PREFIX + "bodySize"  # a dead letter without its body: how large it was

# What the ingress marks a message it sends with: this bridge, and the topic the record was read from.
ORIGIN_PROPERTY = "JmsBridgeOrigin"
KAFKA_TOPIC_PROPERTY = "KafkaTopic"


class SoftFailureReason(enum.StrEnum):
    NO_ROUTE = "NoRoute"
    NO_KEY = "NoKey"
    INVALID_KEY = "InvalidKey"
    UNSUPPORTED_MESSAGE_TYPE = "UnsupportedMessageType"
    CONVERSION_FAILED = "ConversionFailed"
    MALFORMED_JOURNAL_RECORD = "MalformedJournalRecord"
    MESSAGE_TOO_LARGE = "MessageTooLarge"
    INVALID_TEXT = "InvalidText"
    UNMAPPABLE_PROPERTY = "UnmappableProperty"
    NO_DESTINATION = "NoDestination"  # kafkaToJms: the header naming the destination is missing or bad
    SEND_FAILED = "SendFailed"  # kafkaToJms: the JMS provider refused the message
    REPLY_TOPIC_REFUSED = "ReplyTopicRefused"  # kafkaToJms: a request names a topic its route does not list


class Action(enum.StrEnum):
    PUBLISH = "publish"
    DEAD_LETTER = "deadLetter"
    SKIP = "skip"
    LOOP = "loop"  # a message this bridge's ingress sent, on its way back to the topic it came from
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class SoftFailure(Exception):
    reason: SoftFailureReason
    error: str


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


@dataclass(frozen=True, slots=True)
class SourceCoordinates:
    """Where a message came from: its JMS destination and id, and its place in the journal."""

    destination: str
    message_id: str | None
    journal_topic: str
    journal_partition: int
    journal_offset: int

    def describe(self) -> str:
        return (
            f"message {self.message_id} from {self.destination} "
            f"(journal {self.journal_topic}/{self.journal_partition}@{self.journal_offset})"
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    """What to do with one message. `record` and `topic` are set for PUBLISH and DEAD_LETTER."""

    action: Action
    topic: str | None = None
    record: KafkaRecord | None = None
    route: str | None = None
    failure: SoftFailure | None = None


def kafka_key(entry: JournalEntry, route: Route) -> bytes:
    spec = route.spec.key
    name = "JMSMessageID" if spec is None else (spec.header or spec.property or "")
    by_property = spec is not None and spec.property is not None
    text = entry.property_text(name) if by_property else entry.text(name)
    if text is None:
        raise SoftFailure(SoftFailureReason.NO_KEY, f"key {name} is not set on the message")
    if entry.value_type(name) is PropertyType.BOOLEAN:
        raise SoftFailure(SoftFailureReason.INVALID_KEY, f"key {name} is {text!r}, not text or a number")
    return text.encode()


def convert(entry: JournalEntry, route: Route, origin: str) -> KafkaRecord:
    """The Kafka record for a journalled message on a route; raises SoftFailure when this message cannot
    go, FormatError when the journal record itself is malformed.

    A `native` route passes the journal record's headers and body through and adds the origin: the
    journal holds the message in the `native` encoding already. Other formats rebuild the message.
    """
    body_type = entry.body_type
    if body_type not in (BodyType.TEXT, BodyType.BYTES):
        raise SoftFailure(
            SoftFailureReason.UNSUPPORTED_MESSAGE_TYPE,
            f"{body_type.value} is not carried (only TextMessage and BytesMessage)",
        )
    key = kafka_key(entry, route)
    if route.spec.format is Format.NATIVE:
        headers = [*entry.record.headers, (ORIGIN_HEADER, origin.encode())]
        return KafkaRecord(value=entry.record.value, headers=headers, key=key)
    message = entry.message()
    try:
        record = codec(route.spec.format).encode(message, origin)
    except FormatError as error:
        raise SoftFailure(
            SoftFailureReason.CONVERSION_FAILED, f"format {route.spec.format.value}: {error}"
        ) from None
    return KafkaRecord(value=record.value, headers=record.headers, key=key)


def reason_headers(failure: SoftFailure, source: str) -> list[tuple[str, bytes]]:
    """Why a message was dead-lettered and where it came from (`queue://NAME`)."""
    return [
        (DEAD_LETTER_PREFIX + "reason", failure.reason.value.encode()),
        (DEAD_LETTER_PREFIX + "error", failure.error.encode("utf-8", "replace")),
        (DEAD_LETTER_PREFIX + "source", source.encode("utf-8", "replace")),
    ]


def dead_letter(
    original: KafkaRecord, failure: SoftFailure, source: SourceCoordinates, route: str | None
) -> KafkaRecord:
    """The original body and headers, plus headers saying why and where the message came from; without
    the body (its size in a header instead) when the message was too large."""
    headers = list(original.headers)
    headers += reason_headers(failure, source.destination)
    headers += [
        (DEAD_LETTER_PREFIX + "journal", f"{source.journal_topic}/{source.journal_partition}".encode()),
        (DEAD_LETTER_PREFIX + "offset", str(source.journal_offset).encode()),
    ]
    if route is not None:
        headers.append((DEAD_LETTER_PREFIX + "route", route.encode()))
    value = original.value
    if failure.reason is SoftFailureReason.MESSAGE_TOO_LARGE:
        headers.append((BODY_SIZE_HEADER, str(len(value or b"")).encode()))
        value = None
    return KafkaRecord(value=value, headers=headers, key=original.key)


class Egress:
    """Routes and converts journalled messages under one JobConfig."""

    def __init__(self, config: JobConfig, limits: Limits = no_limits) -> None:
        self.config = config
        self.table = RouteTable.of(config.routes)
        self.limits = limits
        self.reply_queue = replies.reply_queue(config)
        self.reply_topics = replies.reply_topics(config)

    def policy(self, route: Route | None) -> SoftFailurePolicy:
        if route is not None and route.spec.on_soft_failure is not None:
            return route.spec.on_soft_failure
        return self.config.bridge.routing.on_soft_failure

    def handle(self, entry: JournalEntry) -> Outcome:
        route = None
        try:
            if self.reply_queue is not None and entry.destination == self.reply_queue:
                return self.reply(entry)
            route = self.table.route(entry)
            if route is None:
                raise SoftFailure(SoftFailureReason.NO_ROUTE, "no route matches")
            if self.is_loop(entry, route):
                return Outcome(Action.LOOP, route=route.name)
            record = convert(entry, route, self.config.bridge_id)
            topic = route.spec.kafka_topic
            limit = self.limits(topic)
            if limit != sys.maxsize and (size := record_size(record)) > limit:
                raise too_large(size, limit, f"topic {topic}")
        except SoftFailure as failure:
            return self.soft_failure(failure, entry, route)
        except FormatError as error:
            malformed = SoftFailure(SoftFailureReason.MALFORMED_JOURNAL_RECORD, str(error))
            return self.soft_failure(malformed, entry, route)
        return Outcome(Action.PUBLISH, route.spec.kafka_topic, record, route.name)

    def reply(self, entry: JournalEntry) -> Outcome:
        """A JMS service's answer to a request from Kafka, to the topic it names (replies.py)."""
        answer = replies.reply_record(entry, self.config.bridge_id, self.reply_topics)
        if isinstance(answer, str):
            raise SoftFailure(SoftFailureReason.NO_ROUTE, answer)
        topic, record, route = answer
        return Outcome(Action.PUBLISH, topic, record, route)

    def is_loop(self, entry: JournalEntry, route: Route) -> bool:
        """A message this bridge's ingress sent from the very topic the route writes to."""
        return (
            entry.property_text(ORIGIN_PROPERTY) == self.config.bridge_id
            and entry.property_text(KAFKA_TOPIC_PROPERTY) == route.spec.kafka_topic
        )

    def source(self, entry: JournalEntry) -> SourceCoordinates:
        destination = entry.record.header(native.PREFIX + "JMSDestination")
        return SourceCoordinates(
            destination=destination.decode("utf-8", "replace") if destination else "(unknown)",
            message_id=entry.message_id,
            journal_topic=self.config.journal_topic,
            journal_partition=entry.partition,
            journal_offset=entry.offset,
        )

    def soft_failure(self, failure: SoftFailure, entry: JournalEntry, route: Route | None) -> Outcome:
        name = None if route is None else route.name
        policy = self.policy(route)
        if policy is SoftFailurePolicy.SKIP:
            return Outcome(Action.SKIP, route=name, failure=failure)
        if policy is SoftFailurePolicy.DEAD_LETTER:
            topic = self.config.bridge.routing.dead_letter_topic
            record = dead_letter(entry.record, failure, self.source(entry), name)
            return Outcome(Action.DEAD_LETTER, topic, record, name, failure)
        return Outcome(Action.FAIL, route=name, failure=failure)
