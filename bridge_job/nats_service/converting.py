"""The pure heart of NATS -> JMS: which route takes a NATS message, the JMS message it becomes, and the
NATS reply a JMS answer becomes.

A NATS message reads like a Kafka record without a key: its headers are the record's headers, its data
the value, so each `format` decodes it as it decodes a record (docs/formats.md): `native` takes JMS
headers and properties from `jms.*` headers (types in `jmsbridge.types`), `envelope` from the payload.
The sent message also carries `NatsSubject` (where it was published) and `JmsBridgeOrigin`, signed
(`JmsBridgeOriginMac`, routing/loops.py): the egress does not publish it back to that subject.

No loops: a message this bridge published (jmsToNats) is not sent back to the JMS destination it was taken
from. As on Kafka, its `jmsbridge.origin` counts only with a `jmsbridge.origin.mac` that verifies with the
bridge's key (formats/native.py, `loop_mark`): any NATS client may write headers, and a forged mark must not
make the bridge drop a message. The bridge's answers to NATS requesters carry the signed mark too.

A request (a message with a reply subject) goes with JMSReplyTo the bridge's reply queue and a
JMSCorrelationID the bridge made; the JMS service's answer goes back to the reply subject in the route's
format. NATS header values are single-line text without surrounding blanks: an answer header that is
not (binary, or a multi-line property) is a soft failure under `native`; `envelope` carries anything.

Routes subscribe each to their subject; where subjects overlap, a message is the first route's (in
(order, name) order), as on Kafka, and the later routes' subscriptions pass over it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time

from bridge_job.config import Direction, Format, JobConfig, Route
from bridge_job.formats import FormatError, KafkaRecord, native
from bridge_job.formats.codecs import codec
from bridge_job.formats.native import loop_mark, signed
from bridge_job.formats.nats import nats_headers
from bridge_job.message import CARRIED_BODIES, BodyType, Destination, JmsMessage, Property
from bridge_job.nats.message import NatsMessage
from bridge_job.routing import loops
from bridge_job.routing.failures import SoftFailure, SoftFailureReason, not_carried, unreadable
from bridge_job.routing.loops import NATS_SUBJECT_PROPERTY, ORIGIN_PROPERTY
from bridge_job.routing.nats_replies import WayBack
from bridge_job.routing.routes import address_matches
from bridge_job.routing.sends import check_sendable, jms_target, send_changes
from bridge_job.signing import LoopMark

DEFAULT_QUEUE_GROUP = "jmsbridge.{bridge_id}"


def nats_routes(config: JobConfig) -> list[Route]:
    return config.routes_for(Direction.NATS_TO_JMS)


def requesting_route(config: JobConfig, name: str) -> Route | None:
    """The jmsToNats route `name`, whose requests a NATS service answers; None when there is none now."""
    return next((r for r in config.routes_for(Direction.JMS_TO_NATS) if r.name == name), None)


def queue_group(route: Route, bridge_id: str) -> str:
    return route.spec.nats_queue_group or DEFAULT_QUEUE_GROUP.format(bridge_id=bridge_id)


def subject_of(route: Route) -> str:
    assert route.spec.nats_subject is not None  # natsToJms routes have one (config/route.py)
    return route.spec.nats_subject


def first_route(routes: list[Route], subject: str) -> Route | None:
    """The route a message published on `subject` belongs to."""
    return next((r for r in routes if address_matches(subject_of(r), subject)), None)


def as_record(message: NatsMessage) -> KafkaRecord:
    return KafkaRecord(value=message.data, headers=[(k, v.encode()) for k, v in message.headers.items()])


def to_jms(
    message: NatsMessage,
    route: Route,
    bridge_id: str,
    key: bytes,
    now_ms: int,
    reply_to: Destination | None = None,
    correlation_id: str | None = None,
) -> JmsMessage:
    """The JMS message for a NATS message on `route`, its loop mark signed with `key`; a request's answer
    comes to `reply_to` marked with `correlation_id`. SoftFailure when the message cannot go."""
    target = jms_target(route, as_record(message).header)
    decoded = decode(message, route.spec.format, target)
    properties = decoded.properties | {
        NATS_SUBJECT_PROPERTY: Property.string(message.subject),
        ORIGIN_PROPERTY: Property.string(bridge_id),
    }
    changes: dict[str, object] = {"destination": target, "redelivered": False, "properties": properties}
    if message.reply is not None:
        changes |= {"reply_to": reply_to, "correlation_id": correlation_id}
    if route.spec.send is not None:
        changes |= send_changes(route.spec.send, decoded, now_ms)
    if message.reply is not None:  # no service should answer a requester that gave up
        deadline = now_ms + route.spec.timeout_ms
        expiration = changes.get("expiration", decoded.expiration)
        assert isinstance(expiration, int)
        changes["expiration"] = min(expiration, deadline) if expiration else deadline
    marked = dataclasses.replace(decoded, **changes)  # type: ignore[arg-type]
    return loops.signed(marked, NATS_SUBJECT_PROPERTY, key)


def nats_loop_mark(message: NatsMessage, target: Destination, bridge_id: str, key: bytes) -> LoopMark:
    """Whether a message is one this bridge published to NATS (jmsToNats) from the very JMS destination it
    would go to (LOOP), or only claims so (FORGED)."""
    headers = message.headers
    if headers.get(native.ORIGIN_HEADER) != bridge_id:  # most messages: told without making a record
        return LoopMark.NONE
    return loop_mark(as_record(message), target, bridge_id, key)


def decode(message: NatsMessage, fmt: Format, target: Destination) -> JmsMessage:
    """A NATS message read in `fmt` as a JMS message to `target`; SoftFailure when it cannot go."""
    record = as_record(message)
    try:
        decoded = codec(fmt).decode(record, target)
    except FormatError as error:
        raise SoftFailure(SoftFailureReason.CONVERSION_FAILED, f"format {fmt.value}: {error}") from None
    plain = fmt is Format.NATIVE and record.header(native.MESSAGE_TYPE_HEADER) is None
    if plain and isinstance(decoded.body, bytes):  # a plain NATS client's payload: text if it reads so
        with contextlib.suppress(UnicodeDecodeError):
            decoded = dataclasses.replace(decoded, body_type=BodyType.TEXT, body=decoded.body.decode())
    refused = not_carried(decoded.body_type, (*CARRIED_BODIES, BodyType.MESSAGE))
    if refused is not None:
        raise refused
    check_sendable(decoded)
    return decoded


def nats_answer_to_jms(message: NatsMessage, way_back: WayBack, fmt: Format, bridge_id: str) -> JmsMessage:
    """A NATS service's answer to a JMS requester (routing/nats_replies.py): to its JMSReplyTo, with the
    correlation id it expects, in the format of the route that sent the request."""
    decoded = decode(message, fmt, way_back.destination)
    properties = decoded.properties | {ORIGIN_PROPERTY: Property.string(bridge_id)}
    return dataclasses.replace(
        decoded,
        destination=way_back.destination,
        correlation_id=way_back.correlation_id,
        reply_to=None,
        redelivered=False,
        properties=properties,
    )


def answer(message: JmsMessage, fmt: Format, bridge_id: str, key: bytes) -> tuple[bytes, dict[str, str]]:
    """A JMS service's answer as the NATS reply: data and headers in the route's format, the origin signed
    with `key`. SoftFailure when the JMS client could not read it or a header cannot be NATS header text."""
    failure = unreadable(message)
    if failure is not None:
        raise failure
    try:
        record = signed(codec(fmt).encode(message, bridge_id), bridge_id, key)
    except FormatError as error:
        raise SoftFailure(SoftFailureReason.CONVERSION_FAILED, f"format {fmt.value}: {error}") from None
    try:
        headers = nats_headers(record)
    except FormatError as error:
        raise SoftFailure(SoftFailureReason.UNMAPPABLE_PROPERTY, str(error)) from None
    return record.value or b"", headers


def now_ms() -> int:
    return int(time.time() * 1000)
