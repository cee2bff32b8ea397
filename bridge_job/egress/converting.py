"""Egress conversion: a journal entry becomes a Kafka record, a dead letter, a skip or a stop.

This is the pure heart of JMS -> Kafka: route the message (first match wins), take the key (a configured
header or property, default JMSMessageID), convert the body and headers in the route's format. What
cannot be done for this one message is a soft failure, handled by the route's policy (else the
bridge's): `fail` stops the bridge, `skip` drops the message with a log line, `deadLetter` publishes the
original record to the dead-letter topic with headers saying why and where it came from.

A jmsToNats route takes its messages the same way; nats_egress/ makes each a NATS message.

Every record and NATS message carries the bridge's loop mark: `jmsbridge.origin` and the MAC that vouches
for it, `jmsbridge.origin.mac` (formats/native.py, `signed`), made once per message.

A message the bridge's ingress sent to JMS from the topic (or subject) its route writes to is a loop and
is dropped (`is_loop`), when its mark (`JmsBridgeOrigin`, `KafkaTopic` or `NatsSubject`) carries a MAC that
verifies (`JmsBridgeOriginMac`, routing/loops.py); any JMS producer can set the properties, and a message
that only claims the mark is sent on like any other.

A record larger than its topic takes (`limit`, learned by the caller: kafka/limits.py) is a soft
failure too (`MessageTooLarge`); its dead letter keeps headers and properties but not the body, whose
size it records.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from bridge_job.config import Direction, Format, JobConfig, Route
from bridge_job.formats import FormatError, KafkaRecord, native
from bridge_job.formats.codecs import codec, registered
from bridge_job.formats.journal import JournalEntry
from bridge_job.formats.native import ORIGIN_HEADER, signed
from bridge_job.formats.registry_wire import Schemas
from bridge_job.message import CARRIED_BODIES, PropertyType
from bridge_job.nats.message import NatsPublish
from bridge_job.nats_egress.converting import to_nats
from bridge_job.routing import loops, replies
from bridge_job.routing.failures import (
    Limits,
    SoftFailure,
    SoftFailureReason,
    dead_letter_record,
    dispose,
    no_limits,
    not_carried,
    record_size,
    too_large,
)
from bridge_job.routing.loops import (
    KAFKA_TOPIC_PROPERTY,
    NATS_SUBJECT_PROPERTY,
    ORIGIN_MAC_PROPERTY,
    ORIGIN_PROPERTY,
)
from bridge_job.routing.pending import pending_route, tombstone
from bridge_job.routing.routes import RouteTable


class Action(enum.StrEnum):
    PUBLISH = "publish"
    DEAD_LETTER = "deadLetter"
    SKIP = "skip"
    LOOP = "loop"  # a message this bridge's ingress sent, on its way back to the topic it came from
    FAIL = "fail"
    NATS = "nats"  # a jmsToNats route's: published to NATS (`Outcome.nats`)


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
    also: tuple[tuple[str, KafkaRecord], ...] = ()  # written with it: a pending request's tombstone
    nats: NatsPublish | None = None  # NATS: the message to publish


# A pending request's entry by its JMSMessageID (routing/pending.py); None when there is none.
PendingLookup = Callable[[str], bytes | None]


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


def convert(
    entry: JournalEntry, route: Route, origin: str, key: bytes, schemas: Schemas | None = None
) -> KafkaRecord:
    """The Kafka record for a journalled message on a route, its origin signed with `key`; raises
    SoftFailure when this message cannot go, FormatError when the journal record itself is malformed.

    A `native` route passes the journal record's headers and body through and adds the origin: the
    journal holds the message in the `native` encoding already. Other formats rebuild the message. The
    `avro` and `jsonSchema` formats take their schemas' ids from `schemas` (the bridge's registry), and
    key a record by the Key record (JMSMessageID) unless the route names a key.
    """
    refused = not_carried(entry.body_type, CARRIED_BODIES)
    if refused is not None:
        raise refused
    fmt = route.spec.format
    record_key = None if fmt.registered and route.spec.key is None else kafka_key(entry, route)
    if fmt is Format.NATIVE:
        headers = [*entry.record.headers, (ORIGIN_HEADER, origin.encode())]
        return signed(KafkaRecord(value=entry.record.value, headers=headers, key=record_key), origin, key)
    message = entry.message()
    try:
        if fmt.registered:
            assert schemas is not None, "a route of a registered format on a bridge without a registry"
            ids = schemas.ids(route.spec.topic, fmt, keyed=record_key is None)
            record = registered(fmt).encode(message, origin, ids)
        else:
            record = codec(fmt).encode(message, origin)
    except FormatError as error:
        raise SoftFailure(SoftFailureReason.CONVERSION_FAILED, f"format {fmt.value}: {error}") from None
    record_key = record.key if record_key is None else record_key
    return signed(KafkaRecord(value=record.value, headers=record.headers, key=record_key), origin, key)


def dead_letter(
    original: KafkaRecord, failure: SoftFailure, source: SourceCoordinates, route: str | None
) -> KafkaRecord:
    """The journal record as it is, with where it was journalled (routing/failures.py)."""
    journal = f"{source.journal_topic}/{source.journal_partition}"
    offset = source.journal_offset
    return dead_letter_record(
        original, failure, source.destination, journal=journal, offset=offset, route=route
    )


class Egress:
    """Routes and converts journalled messages under one JobConfig."""

    def __init__(
        self,
        config: JobConfig,
        limits: Limits = no_limits,
        pending: PendingLookup | None = None,
        clock: Callable[[], float] = time.time,
        schemas: Schemas | None = None,
    ) -> None:
        self.config = config
        self.schemas = schemas  # the schema registry, for routes of format avro and jsonSchema
        self.clock = clock  # unix seconds: when NATS reply subjects expire
        self.table = RouteTable.of(config.routes)
        self.limits = limits
        self.reply_queue = replies.reply_queue(config)
        self.reply_topics = config.reply_topics
        self.pending = pending if config.keeps_pending_requests else None
        self.loops = loops.LoopGuard(
            f"JMS messages with this bridge's loop mark ({ORIGIN_PROPERTY}) and no valid "
            f"{ORIGIN_MAC_PROPERTY} were sent on, not dropped as loops (forged, or sent to JMS before the "
            "bridge signed its marks)"
        )
        self.key = self.loops.key

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
            if route.spec.direction is Direction.JMS_TO_NATS:
                nats = to_nats(entry, route, self.config.bridge_id, self.key, self.clock())
                return Outcome(Action.NATS, route=route.name, nats=nats)
            record = convert(entry, route, self.config.bridge_id, self.key, self.schemas)
            topic = route.spec.topic
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
        """A JMS service's answer to a request from Kafka, to the topic it names (routing/replies.py), or
        to the one its pending request names."""
        answer = replies.reply_record(entry, self.config.bridge_id, self.reply_topics, self.key)
        if isinstance(answer, str):
            if self.pending is None:
                raise SoftFailure(SoftFailureReason.NO_ROUTE, answer)
            return self.pending_reply(entry)
        topic, record, route = answer
        return Outcome(Action.PUBLISH, topic, record, route)

    def pending_reply(self, entry: JournalEntry) -> Outcome:
        """The answer to a `messageId` request; its entry is tombstoned, answered or expired."""
        assert self.pending is not None
        message_id = entry.text("JMSCorrelationID")
        found = None if message_id is None else self.pending(message_id)
        answer = replies.pending_answer(entry, self.config.bridge_id, found, self.reply_topics, self.key)
        done = (
            ()
            if found is None or message_id is None
            else ((self.config.pending_topic, tombstone(message_id)),)
        )
        if isinstance(answer, SoftFailure):
            name = pending_route(found)
            route = next((r for r in self.config.routes if r.name == name), None)
            return dataclasses.replace(self.soft_failure(answer, entry, route), also=done)
        topic, record, route_name = answer
        return Outcome(Action.PUBLISH, topic, record, route_name, also=done)

    def is_loop(self, entry: JournalEntry, route: Route) -> bool:
        """A message this bridge sent to JMS from the very topic (or NATS subject) the route writes to, by
        a mark whose MAC verifies; one that only claims so is sent on, and said (rate-limited)."""
        if route.spec.direction is Direction.JMS_TO_NATS:
            source_property, source = NATS_SUBJECT_PROPERTY, route.spec.nats_subject
        else:
            source_property, source = KAFKA_TOPIC_PROPERTY, route.spec.kafka_topic
        mark = loops.loop_mark(entry, source_property, source or "", self.config.bridge_id, self.key)
        return self.loops.is_loop(mark, lambda: self.source(entry).describe())

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
        return dispose(
            self.config,
            route,
            fail=lambda: Outcome(Action.FAIL, route=name, failure=failure),
            skip=lambda: Outcome(Action.SKIP, route=name, failure=failure),
            dead_letter=lambda topic: Outcome(
                Action.DEAD_LETTER,
                topic,
                dead_letter(entry.record, failure, self.source(entry), name),
                name,
                failure,
            ),
        )
