"""What every flow that sends to JMS decides the same way: the destination a route names (or a header
holds, within the route's `allowed`), the route's `send` overrides, and whether a message can be sent at
all."""

from __future__ import annotations

import re
from collections.abc import Callable

from bridge_job.config import IDENTIFIER_PATTERN, Correlation, JmsSendSpec, Route
from bridge_job.message import DeliveryMode, Destination, DestinationKind, JmsMessage
from bridge_job.routing.failures import SoftFailure, SoftFailureReason

_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)

# A destination a header names must be one name, as a route's own `queue` or `topic` is (no whitespace, at
# most 255 characters): ActiveMQ sends to every destination of `a,b` and to every queue `orders.>` or
# `orders.*` matches, Artemis to every address `#` or `*` matches, so no expression over names could
# bound where a name holding them goes.
_ONE_NAME = re.compile(r"[^\s,*>#]{1,255}")


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
    assert spec.from_header is not None and spec.allowed is not None  # the model requires both together
    raw = header(spec.from_header)
    if raw is None:
        raise SoftFailure(SoftFailureReason.NO_DESTINATION, f"header {spec.from_header} is not set")
    try:
        target = Destination.parse(raw.decode())
    except (UnicodeDecodeError, ValueError) as error:
        raise SoftFailure(SoftFailureReason.NO_DESTINATION, f"header {spec.from_header}: {error}") from None
    check_allowed(target, spec.from_header, spec.allowed)
    return target


def check_allowed(target: Destination, header: str, allowed: str) -> None:
    """SoftFailure unless `target`, which the header `header` names, is one destination whose URI the
    route's `allowed` expression matches in full."""
    uri = target.uri()
    shown = repr(uri if len(uri) <= 300 else uri[:300] + "...")  # the header's text, as data
    if _ONE_NAME.fullmatch(target.name) is None:
        raise SoftFailure(
            SoftFailureReason.DESTINATION_NOT_ALLOWED,
            f"header {header}: {shown} is not one destination name (1 to 255 characters, no whitespace, "
            "none of `,` `*` `>` `#`, which name several destinations on some brokers)",
        )
    if re.fullmatch(allowed, uri) is None:
        raise SoftFailure(
            SoftFailureReason.DESTINATION_NOT_ALLOWED,
            f"header {header}: destination {shown} is outside the route's jmsDestination.allowed: {allowed}",
        )


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
