"""A NATS message as the flows see it: plain data, no client attached."""

from __future__ import annotations

from dataclasses import dataclass, field

# Status replies (the NATS protocol's inline status, `NATS/1.0 <code> <description>`).
TIMEOUT_STATUS = (408, "Request Timeout")
BAD_REQUEST_STATUS = (400, "Bad Request")  # a request the bridge cannot send to JMS
BAD_GATEWAY_STATUS = (502, "Bad Gateway")  # an answer the bridge cannot send to NATS
# Why the bridge answered with a status, for the requester to read.
ERROR_HEADER = "Jmsbridge-Error"
# Where nats-py puts a status reply's code.
STATUS_HEADER = "Status"


@dataclass(frozen=True, slots=True)
class NatsMessage:
    subject: str
    data: bytes
    reply: str | None = None  # a request's reply subject
    headers: dict[str, str] = field(default_factory=dict)
    received: float = 0.0  # time.monotonic() when the bridge took it


@dataclass(frozen=True, slots=True)
class NatsPublish:
    """A message the bridge publishes to NATS: a request when it names a reply subject."""

    subject: str
    data: bytes
    headers: dict[str, str] = field(default_factory=dict)
    reply: str | None = None


def is_no_responders(message: NatsMessage) -> bool:
    """The server's status reply to a request no subscriber took."""
    return message.headers.get(STATUS_HEADER) == "503" and not message.data
