"""What every flow that sends to JMS decides the same way: the destination a route names (or a header
holds), the route's `send` overrides, and whether a message can be sent at all."""

from __future__ import annotations

import re
from collections.abc import Callable

from bridge_job.config import IDENTIFIER_PATTERN, Correlation, JmsSendSpec, Route
from bridge_job.message import DeliveryMode, Destination, DestinationKind, JmsMessage
from bridge_job.routing.failures import SoftFailure, SoftFailureReason

_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)


def is_identifier(name: str) -> bool:
    """A legal JMS property name (a Java identifier)."""
    return _IDENTIFIER.fullmatch(name) is not None


def jms_target(route: Route, header: Callable[[str], bytes | None]) -> Destination:
    """The route's destination, or the one the header it names holds (`header(name)` reads the
    incoming message's header)."""
    spec = route.spec.jms_destination
    assert spec is not None  # the routes that send to JMS have one (config/route.py)
    if spec.queue is not None:
        return Destination(DestinationKind.QUEUE, spec.queue)
    if spec.topic is not None:
        return Destination(DestinationKind.TOPIC, spec.topic)
    assert spec.from_header is not None
    raw = header(spec.from_header)
    if raw is None:
        raise SoftFailure(SoftFailureReason.NO_DESTINATION, f"header {spec.from_header} is not set")
    try:
        return Destination.parse(raw.decode())
    except (UnicodeDecodeError, ValueError) as error:
        raise SoftFailure(SoftFailureReason.NO_DESTINATION, f"header {spec.from_header}: {error}") from None


def check_sendable(message: JmsMessage) -> None:
    """SoftFailure for what no JMS provider takes: a property name that is no Java identifier."""
    for name in message.properties:
        if not is_identifier(name):
            raise SoftFailure(
                SoftFailureReason.CONVERSION_FAILED, f"property {name!r}: not a legal JMS property name"
            )


def send_changes(send: JmsSendSpec, message: JmsMessage, now_ms: int) -> dict[str, object]:
    """What a route's `send` overrides."""
    changes: dict[str, object] = {}
    if send.correlation is Correlation.MESSAGE_ID:  # a JMS requester that expects its own id back
        if message.message_id is None:
            raise SoftFailure(
                SoftFailureReason.CONVERSION_FAILED,
                "send.correlation messageId: the message carries no JMSMessageID (header jms.JMSMessageID)",
            )
        changes["correlation_id"] = message.message_id
    if send.delivery_mode is not None:
        persistent = send.delivery_mode == "persistent"
        changes["delivery_mode"] = DeliveryMode.PERSISTENT if persistent else DeliveryMode.NON_PERSISTENT
    if send.priority is not None:
        changes["priority"] = send.priority
    if send.time_to_live_ms is not None:
        changes["expiration"] = now_ms + send.time_to_live_ms if send.time_to_live_ms else 0
    return changes
