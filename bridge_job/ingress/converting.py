"""Ingress conversion: a Kafka record becomes a JMS message to send, a dead letter, a skip or a stop.

The pure heart of Kafka -> JMS, the inverse of egress/converting.py: find the route of the
record's topic (first match in (order, name) order), decode the record in the route's format, address the
message to the route's destination (or the one a record header names, for replies), and mark it:

- `KafkaTopic`, `KafkaPartition`, `KafkaOffset`, `KafkaTimestamp` and, when the key is UTF-8, `KafkaKey`:
  where the record came from, as properties with legal JMS names;
- `JmsBridgeOrigin`: this bridge, so that its egress does not send the message back to the topic it came
  from, and `JmsBridgeOriginMac`, the MAC that vouches for the origin, the topic and the body
  (routing/loops.py): a JMS producer that sets the first two cannot make the egress drop its message;
- `_AMQ_DUPL_ID`: `<bridge>:<topic>:<partition>:<offset>`, the same for every send of one record, so a
  replayed batch is recognisable (ActiveMQ Artemis drops such duplicates itself; a transaction holding
  one it refuses whole, and ingress/task.py then sends its messages one transaction each).

A `native` record without `jmsbridge.messageType` (from a plain Kafka producer) becomes a TextMessage
when its value is UTF-8 and a BytesMessage otherwise.

No loops: a record this bridge wrote (`jmsbridge.origin`) is not sent back to the JMS destination it was
taken from (`jms.JMSDestination`); such records are skipped and counted. Any producer may write those
headers, so only a record whose `jmsbridge.origin.mac` verifies with the bridge's key is one
(formats/native.py, `loop_mark`): a forged mark cannot make the bridge drop a record, which is delivered
like any other and logged (rate-limited). A record the bridge wrote before it signed its marks has no MAC:
it goes to JMS once, where the egress stops it (`JmsBridgeOrigin`, `KafkaTopic`).

What cannot be done for one record is a soft failure under the route's (else the bridge's) policy, as in
egress: `fail` stops the bridge, `skip` drops the record, `deadLetter` writes it to the dead-letter topic
with headers saying why and where it came from.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import time
from dataclasses import dataclass

from bridge_job.config import (
    Correlation,
    Direction,
    Format,
    JobConfig,
    Route,
)
from bridge_job.formats import FormatError, KafkaRecord, native
from bridge_job.formats.codecs import codec, registered
from bridge_job.formats.native import loop_mark
from bridge_job.formats.registry_wire import Schemas
from bridge_job.message import CARRIED_BODIES, BodyType, Destination, JmsMessage, Property
from bridge_job.routing import loops
from bridge_job.routing.failures import (
    SoftFailure,
    SoftFailureReason,
    dead_letter_record,
    dispose,
    not_carried,
)
from bridge_job.routing.loops import KAFKA_TOPIC_PROPERTY, ORIGIN_PROPERTY, LoopGuard
from bridge_job.routing.pending import PendingRequest
from bridge_job.routing.replies import REPLY_TOPIC_HEADER, reply_queue, request_correlation
from bridge_job.routing.routes import RouteTable
from bridge_job.routing.sends import check_sendable, jms_target, send_changes

DUPLICATE_ID_PROPERTY = "_AMQ_DUPL_ID"


@dataclass(frozen=True, slots=True)
class KafkaSource:
    """Where a record was read."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int

    def describe(self) -> str:
        return f"record {self.topic}/{self.partition}@{self.offset}"


@dataclass(frozen=True, slots=True)
class IngressRecord:
    record: KafkaRecord
    source: KafkaSource

    def text(self, name: str) -> str | None:
        """A header's text by its Kafka name, else by its JMS name (`jms.<name>`); for `match.headers`."""
        raw = self.record.header(name)
        if raw is None:
            raw = self.record.header(native.PREFIX + name)
        return None if raw is None else raw.decode("utf-8", "replace")


class IngressAction(enum.StrEnum):
    SEND = "send"
    DEAD_LETTER = "deadLetter"
    SKIP = "skip"
    LOOP = "loop"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class IngressOutcome:
    """What to do with one record: `message` for SEND, `dead_letter` for DEAD_LETTER."""

    action: IngressAction
    message: JmsMessage | None = None
    dead_letter: KafkaRecord | None = None
    route: str | None = None
    failure: SoftFailure | None = None
    request: PendingRequest | None = None  # SEND of a `messageId` request: kept under the id it is sent with


def kafka_properties(record: KafkaRecord, source: KafkaSource, bridge_id: str) -> dict[str, Property]:
    properties = {
        KAFKA_TOPIC_PROPERTY: Property.string(source.topic),
        "KafkaPartition": Property.of(source.partition),
        "KafkaOffset": Property.of(source.offset),
        "KafkaTimestamp": Property.of(source.timestamp_ms),
        ORIGIN_PROPERTY: Property.string(bridge_id),
        DUPLICATE_ID_PROPERTY: Property.string(
            f"{bridge_id}:{source.topic}:{source.partition}:{source.offset}"
        ),
    }
    # A binary key has no JMS string form; the record's coordinates still identify it.
    with contextlib.suppress(UnicodeDecodeError):
        if record.key is not None:
            properties["KafkaKey"] = Property.string(record.key.decode())
    return properties


def decode(
    record: KafkaRecord, fmt: Format, target: Destination, schemas: Schemas | None = None
) -> JmsMessage:
    if fmt.registered:
        assert schemas is not None, "a route of a registered format on a bridge without a registry"
        return registered(fmt).decode(record, target, schemas.schema)
    message = codec(fmt).decode(record, target)
    plain = fmt is Format.NATIVE and record.header(native.MESSAGE_TYPE_HEADER) is None
    if plain and isinstance(message.body, bytes):  # a plain Kafka producer's record: text if it reads so
        with contextlib.suppress(UnicodeDecodeError):
            return dataclasses.replace(message, body_type=BodyType.TEXT, body=message.body.decode())
    return message


def request_changes(
    record: IngressRecord, route: Route, message: JmsMessage, config: JobConfig
) -> dict[str, object]:
    """For a request to a JMS service (a route with `reply`): where and how the answer comes back."""
    raw = record.record.header(REPLY_TOPIC_HEADER)
    if route.spec.reply is None or raw is None:
        return {}
    topic = raw.decode("utf-8", "replace")
    if topic not in route.spec.reply.topics:
        raise SoftFailure(
            SoftFailureReason.REPLY_TOPIC_REFUSED,
            f"header {REPLY_TOPIC_HEADER} names {topic!r}, which is not in the route's reply.topics",
        )
    correlation = message.correlation_id
    key = record.record.key
    if correlation is None and key is not None:
        correlation = key.decode("utf-8", "replace")
    if correlation is None:
        correlation = f"{record.source.topic}:{record.source.partition}:{record.source.offset}"
    if route.spec.reply.correlation is Correlation.MESSAGE_ID:  # the answer is found by its request's id
        return {"reply_to": reply_queue(config), "correlation_id": correlation}
    return {"reply_to": reply_queue(config), "correlation_id": request_correlation(topic, correlation)}


def pending_request(
    record: IngressRecord, route: Route, message: JmsMessage, now_ms: int
) -> PendingRequest | None:
    """What to remember of a request to a `messageId` service (routing/pending.py), once sent as `message`."""
    reply = route.spec.reply
    raw = record.record.header(REPLY_TOPIC_HEADER)
    if reply is None or reply.correlation is not Correlation.MESSAGE_ID or raw is None:
        return None
    assert message.correlation_id is not None  # request_changes set the requester's
    return PendingRequest(
        raw.decode("utf-8", "replace"), message.correlation_id, now_ms + reply.timeout_ms, route.name
    )


def to_jms(
    record: IngressRecord,
    route: Route,
    config: JobConfig,
    key: bytes,
    now_ms: int,
    schemas: Schemas | None = None,
) -> JmsMessage:
    """The message to send for a record on a route, its loop mark signed with `key`; raises SoftFailure
    when this record cannot go. `schemas`: the bridge's registry, for routes of format avro and jsonSchema."""
    target = jms_target(route, record.record.header)
    try:
        message = decode(record.record, route.spec.format, target, schemas)
    except FormatError as error:
        raise SoftFailure(
            SoftFailureReason.CONVERSION_FAILED, f"format {route.spec.format.value}: {error}"
        ) from None
    refused = not_carried(message.body_type, (*CARRIED_BODIES, BodyType.MESSAGE))
    if refused is not None:
        raise refused
    check_sendable(message)
    spec = route.spec
    send = spec.send
    reply_to = message.reply_to
    if spec.jms_destination is not None and spec.jms_destination.from_header == native.PREFIX + "JMSReplyTo":
        reply_to = None  # a reply: it goes to the requester's destination, which expects no answer
    changes: dict[str, object] = {
        "destination": target,
        "reply_to": reply_to,
        "redelivered": False,
        "properties": message.properties | kafka_properties(record.record, record.source, config.bridge_id),
    }
    changes |= request_changes(record, route, message, config)
    if send is not None:
        changes |= send_changes(send, message, now_ms)
    marked = dataclasses.replace(message, **changes)  # type: ignore[arg-type]
    return loops.signed(marked, KAFKA_TOPIC_PROPERTY, key)


def dead_letter(
    original: KafkaRecord, failure: SoftFailure, source: KafkaSource, route: str | None
) -> KafkaRecord:
    """The original record, plus headers saying why and where it was read (the egress names, with
    `source` the topic and partition)."""
    where = f"{source.topic}/{source.partition}"
    return dead_letter_record(original, failure, where, offset=source.offset, route=route)


class Ingress:
    """Routes and converts Kafka records under one JobConfig."""

    def __init__(self, config: JobConfig, schemas: Schemas | None = None) -> None:
        self.config = config
        self.schemas = schemas
        self.table = RouteTable.of(config.routes, Direction.KAFKA_TO_JMS)
        self.loops = LoopGuard(
            "records with this bridge's loop mark and no valid jmsbridge.origin.mac were sent to JMS, not "
            "dropped as loops (forged, or written before the bridge signed its marks)"
        )
        self.key = self.loops.key

    def route(self, record: IngressRecord) -> Route | None:
        return self.table.route_record(record.source.topic, record.text)

    def handle(self, record: IngressRecord, now_ms: int | None = None) -> IngressOutcome:
        route = self.route(record)
        if route is None:
            return self.soft_failure(
                SoftFailure(SoftFailureReason.NO_ROUTE, "no route matches"), record, None
            )
        now_ms = now_ms or int(time.time() * 1000)
        try:
            message = to_jms(record, route, self.config, self.key, now_ms, self.schemas)
        except SoftFailure as failure:
            return self.soft_failure(failure, record, route)
        mark = loop_mark(record.record, message.destination, self.config.bridge_id, self.key)
        if self.loops.is_loop(mark, record.source.describe):
            return IngressOutcome(IngressAction.LOOP, route=route.name)
        request = pending_request(record, route, message, now_ms)
        return IngressOutcome(IngressAction.SEND, message, route=route.name, request=request)

    def soft_failure(
        self, failure: SoftFailure, record: IngressRecord, route: Route | None
    ) -> IngressOutcome:
        name = None if route is None else route.name
        return dispose(
            self.config,
            route,
            fail=lambda: IngressOutcome(IngressAction.FAIL, route=name, failure=failure),
            skip=lambda: IngressOutcome(IngressAction.SKIP, route=name, failure=failure),
            dead_letter=lambda topic: IngressOutcome(
                IngressAction.DEAD_LETTER,
                dead_letter=dead_letter(record.record, failure, record.source, name),
                route=name,
                failure=failure,
            ),
        )
