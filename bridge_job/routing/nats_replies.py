"""Request/reply from a JMS requester to a NATS service: how the answer finds its way back.

A JMS message with JMSReplyTo on a jmsToNats route is a request: the bridge publishes it with a reply
subject of its own, `_JMSBRIDGE.<bridgeId>.reply.<mac>.<token>`, the token carrying where the answer goes
(the requester's JMSReplyTo), the correlation id the requester expects (its JMSCorrelationID, or its
JMSMessageID when it set none) and the route (whose format the answer is read in). The bridge's NATS
service subscribes to `_JMSBRIDGE.<bridgeId>.reply.>` and sends each answer there.

Anyone who may publish on NATS may publish to those subjects too, with a token naming any JMS destination;
so the token is signed with the bridge's key (bridge_job/signing.py), and an answer is sent only when its
subject is one the bridge made: its destination is then a requester's own reply destination, and its
route one the bridge published the request on. The MAC is a subject token of its own, since a token
cannot hold `.`. What does not verify (an unsigned subject of a bridge before signing, a forged or altered
one) is dropped; the service counts and logs it.

A subject expires, or whoever saw one (any subscriber of the request's subject) could send answers to its
requester's destination for as long as it exists. The token holds its deadline (`e`, unix seconds, under
the MAC): when the request expires (its JMSExpiration, the requester's time to live: it stopped waiting
then), and at most LONGEST_WAIT_SECONDS after the bridge published it, the longest any request through
the bridge waits (a natsToJms route's `timeoutSeconds` is at most that), for a requester that set no time
to live. An answer after it is of no use to the requester and is dropped like a forged one, as is one on a
subject of a bridge before subjects expired (no deadline). The instance that signs and the one that
verifies read different clocks (the egress's worker, the NATS service's, the other instance's after a
failover), so a subject is taken for CLOCK_SKEW_SECONDS past its deadline.

As with Kafka's `<topic>/<id>` correlation (routing/replies.py), the way back travels in the request:
nothing is remembered between request and answer, so an answer finds its requester whichever process of
the bridge gets it, after a restart or a failover too. Both instances sign with the one key the operator
keeps in the bridge's Secret, so one verifies what the other signed.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime

from bridge_job.message import Destination
from bridge_job.signing import mac, verify

REPLY_PREFIX = "_JMSBRIDGE.{bridge_id}.reply"
_SIGNED = b"nats-reply"  # what the MAC signs besides the token: no other mark of the bridge signs alike
LONGEST_WAIT_SECONDS = 3600  # a subject's life when its request has no JMSExpiration (see above)
CLOCK_SKEW_SECONDS = 30  # how far the clocks of the signing and the verifying instance may disagree


@dataclass(frozen=True, slots=True)
class WayBack:
    destination: Destination  # the requester's JMSReplyTo
    correlation_id: str
    route: str


def replies_subject(bridge_id: str) -> str:
    """What the bridge's NATS service subscribes to for the answers: all of its reply subjects, those it
    did not make too, so that a forged answer is dropped and counted rather than unheard."""
    return REPLY_PREFIX.format(bridge_id=bridge_id) + ".>"


def expiry(expiration_ms: int, now: float) -> int:
    """When the reply subject of a request published at `now` (unix seconds) expires: at its JMSExpiration
    (`expiration_ms`, 0 for none), and at most LONGEST_WAIT_SECONDS later."""
    deadline = now + LONGEST_WAIT_SECONDS
    return math.ceil(min(deadline, expiration_ms / 1000) if expiration_ms else deadline)


def reply_subject(bridge_id: str, way_back: WayBack, key: bytes, expires: int) -> str:
    """The subject that leads an answer back, good until `expires` (unix seconds, `expiry`)."""
    to, correlation, route = way_back.destination.uri(), way_back.correlation_id, way_back.route
    fields = {"to": to, "c": correlation, "r": route, "e": expires}
    token = base64.urlsafe_b64encode(json.dumps(fields, separators=(",", ":")).encode()).rstrip(b"=").decode()
    signature = mac(key, _SIGNED, bridge_id.encode(), token.encode())
    return f"{REPLY_PREFIX.format(bridge_id=bridge_id)}.{signature}.{token}"


def way_back(subject: str, bridge_id: str, key: bytes, now: float) -> WayBack:
    """The way back a reply subject the bridge made holds, at `now` (unix seconds); ValueError saying why
    when it is not one, or no longer."""
    prefix = REPLY_PREFIX.format(bridge_id=bridge_id) + "."
    signature, dot, token = subject.removeprefix(prefix).partition(".")
    if not subject.startswith(prefix) or not dot or "." in token:
        raise ValueError(
            f"reply subject {subject!r} is not <mac>.<token> under {prefix}*: unsigned (made before reply "
            "subjects were signed) or forged"
        )
    if not verify(key, signature, _SIGNED, bridge_id.encode(), token.encode()):
        raise ValueError(
            f"reply subject {subject!r}: its MAC does not verify: forged or altered, or signed with another "
            "key (the instances' JMSBRIDGE_BRIDGE_KEY differ, or the key changed)"
        )
    try:
        fields = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        back = WayBack(Destination.parse(str(fields["to"])), str(fields["c"]), str(fields["r"]))
        expires = fields.get("e")
    except (binascii.Error, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"reply subject {subject!r} names no JMS requester: {error}") from None
    if not isinstance(expires, int) or isinstance(expires, bool):
        raise ValueError(f"reply subject {subject!r} has no deadline: made before reply subjects expired")
    if now > expires + CLOCK_SKEW_SECONDS:
        at = datetime.fromtimestamp(expires, UTC).isoformat(timespec="seconds")
        raise ValueError(
            f"reply subject {subject!r} expired at {at} (unix {expires}): too late for its requester"
        )
    return back
