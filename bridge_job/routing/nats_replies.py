"""Request/reply from a JMS requester to a NATS service: how the answer finds its way back.

A JMS message with JMSReplyTo on a jmsToNats route is a request: the bridge publishes it with a reply
subject of its own, `_JMSBRIDGE.<bridgeId>.reply.<token>`, the token carrying where the answer goes (the
requester's JMSReplyTo), the correlation id the requester expects (its JMSCorrelationID, or its
JMSMessageID when it set none) and the route (whose format the answer is read in). The bridge's NATS
service subscribes to `_JMSBRIDGE.<bridgeId>.reply.*` and sends each answer there.

As with Kafka's `<topic>/<id>` correlation (routing/replies.py), the way back travels in the request:
nothing is remembered between request and answer, so an answer finds its requester whichever process of
the bridge gets it, after a restart or a failover too.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from bridge_job.message import Destination

REPLY_PREFIX = "_JMSBRIDGE.{bridge_id}.reply"


@dataclass(frozen=True, slots=True)
class WayBack:
    destination: Destination  # the requester's JMSReplyTo
    correlation_id: str
    route: str


def replies_subject(bridge_id: str) -> str:
    """What the bridge's NATS service subscribes to for the answers."""
    return REPLY_PREFIX.format(bridge_id=bridge_id) + ".*"


def reply_subject(bridge_id: str, way_back: WayBack) -> str:
    fields = {"to": way_back.destination.uri(), "c": way_back.correlation_id, "r": way_back.route}
    token = base64.urlsafe_b64encode(json.dumps(fields, separators=(",", ":")).encode()).rstrip(b"=")
    return f"{REPLY_PREFIX.format(bridge_id=bridge_id)}.{token.decode()}"


def way_back(subject: str) -> WayBack:
    """The way back a reply subject holds; ValueError when it holds none."""
    token = subject.rpartition(".")[2]
    try:
        fields = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return WayBack(Destination.parse(str(fields["to"])), str(fields["c"]), str(fields["r"]))
    except (binascii.Error, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"reply subject {subject!r} names no JMS requester: {error}") from None
