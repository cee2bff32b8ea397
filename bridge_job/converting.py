"""Egress conversion: a journalled JMS message becomes a Kafka record, a dead letter, a skip or a stop.

This is the pure heart of JMS -> Kafka: route the message (first match wins), take the key (a configured
header or property, default JMSMessageID), convert the body and headers in the route's format. What
cannot be done for this one message is a soft failure, handled by the route's policy (else the
bridge's): `fail` stops the bridge, `skip` drops the message with a log line, `deadLetter` publishes the
original record to the dead-letter topic with headers saying why and where it came from.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from bridge_job.config import JobConfig, Route, SoftFailurePolicy
from bridge_job.formats import FormatError, KafkaRecord
from bridge_job.formats.codecs import codec
from bridge_job.formats.native import render_value
from bridge_job.message import BodyType, JmsMessage
from bridge_job.routing import RouteTable

DEAD_LETTER_PREFIX = "jmsbridge.deadletter."


class SoftFailureReason(enum.StrEnum):
    NO_ROUTE = "NoRoute"
    NO_KEY = "NoKey"
    INVALID_KEY = "InvalidKey"
    UNSUPPORTED_MESSAGE_TYPE = "UnsupportedMessageType"
    CONVERSION_FAILED = "ConversionFailed"
    MALFORMED_JOURNAL_RECORD = "MalformedJournalRecord"


class Action(enum.StrEnum):
    PUBLISH = "publish"
    DEAD_LETTER = "deadLetter"
    SKIP = "skip"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class SoftFailure(Exception):
    reason: SoftFailureReason
    error: str


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


def kafka_key(message: JmsMessage, route: Route) -> bytes:
    spec = route.spec.key
    name = "JMSMessageID" if spec is None else (spec.header or spec.property or "")
    if spec is not None and spec.property is not None:
        prop = message.properties.get(name)
        value = None if prop is None else prop.value
    else:
        value = message.header(name)
    if value is None:
        raise SoftFailure(SoftFailureReason.NO_KEY, f"key {name} is not set on the message")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise SoftFailure(
            SoftFailureReason.INVALID_KEY, f"key {name} is {render_value(value)!r}, not text or a number"
        )
    return render_value(value).encode()


def convert(message: JmsMessage, route: Route, origin: str) -> KafkaRecord:
    """The Kafka record for a message on a route; raises SoftFailure when this message cannot go."""
    if message.body_type not in (BodyType.TEXT, BodyType.BYTES):
        raise SoftFailure(
            SoftFailureReason.UNSUPPORTED_MESSAGE_TYPE,
            f"{message.body_type.value} is not carried (only TextMessage and BytesMessage)",
        )
    key = kafka_key(message, route)
    try:
        record = codec(route.spec.format).encode(message, origin)
    except FormatError as error:
        raise SoftFailure(
            SoftFailureReason.CONVERSION_FAILED, f"format {route.spec.format.value}: {error}"
        ) from None
    return KafkaRecord(value=record.value, headers=record.headers, key=key)


def dead_letter(
    original: KafkaRecord, failure: SoftFailure, source: SourceCoordinates, route: str | None
) -> KafkaRecord:
    """The original body and headers, plus headers saying why and where the message came from."""
    headers = list(original.headers)
    headers += [
        (DEAD_LETTER_PREFIX + "reason", failure.reason.value.encode()),
        (DEAD_LETTER_PREFIX + "error", failure.error.encode()),
        (DEAD_LETTER_PREFIX + "source", source.destination.encode()),
        (DEAD_LETTER_PREFIX + "journal", f"{source.journal_topic}/{source.journal_partition}".encode()),
        (DEAD_LETTER_PREFIX + "offset", str(source.journal_offset).encode()),
    ]
    if route is not None:
        headers.append((DEAD_LETTER_PREFIX + "route", route.encode()))
    return KafkaRecord(value=original.value, headers=headers, key=original.key)


class Egress:
    """Routes and converts journalled messages under one JobConfig."""

    def __init__(self, config: JobConfig) -> None:
        self.config = config
        self.table = RouteTable.of(config.routes)

    def policy(self, route: Route | None) -> SoftFailurePolicy:
        if route is not None and route.spec.on_soft_failure is not None:
            return route.spec.on_soft_failure
        return self.config.bridge.routing.on_soft_failure

    def handle(self, message: JmsMessage, original: KafkaRecord, source: SourceCoordinates) -> Outcome:
        route = self.table.route(message)
        try:
            if route is None:
                raise SoftFailure(SoftFailureReason.NO_ROUTE, "no route matches")
            record = convert(message, route, self.config.bridge_id)
        except SoftFailure as failure:
            return self.soft_failure(failure, original, source, route)
        return Outcome(Action.PUBLISH, route.spec.kafka_topic, record, route.name)

    def soft_failure(
        self, failure: SoftFailure, original: KafkaRecord, source: SourceCoordinates, route: Route | None
    ) -> Outcome:
        name = None if route is None else route.name
        policy = self.policy(route)
        if policy is SoftFailurePolicy.SKIP:
            return Outcome(Action.SKIP, route=name, failure=failure)
        if policy is SoftFailurePolicy.DEAD_LETTER:
            topic = self.config.bridge.routing.dead_letter_topic
            record = dead_letter(original, failure, source, name)
            return Outcome(Action.DEAD_LETTER, topic, record, name, failure)
        return Outcome(Action.FAIL, route=name, failure=failure)
