"""jmsToNats conversion: a journalled message becomes a NATS message in the route's format.

A message with JMSReplyTo becomes a NATS request whose reply subject holds the way back
(routing/nats_replies.py), signed with the bridge's key and good until the request expires. The egress
routes the journal for both destinations (egress/converting.py) and calls this for a jmsToNats
route; the answers come back through the NATS service (nats_service/service.py).
"""

from __future__ import annotations

from bridge_job.config import Route
from bridge_job.formats import FormatError
from bridge_job.formats.codecs import codec
from bridge_job.formats.journal import JournalEntry
from bridge_job.formats.native import signed
from bridge_job.formats.nats import nats_headers
from bridge_job.message import BodyType
from bridge_job.nats.message import NatsPublish
from bridge_job.routing.failures import SoftFailure, SoftFailureReason, not_carried
from bridge_job.routing.nats_replies import WayBack, expiry, reply_subject


def to_nats(entry: JournalEntry, route: Route, origin: str, key: bytes, now: float) -> NatsPublish:
    """The NATS message for a journalled message on a jmsToNats route, published at `now` (unix seconds),
    its origin and its reply subject signed with `key`; a request (JMSReplyTo set) names the reply subject
    that leads its answer back until the request expires. SoftFailure when the message cannot go."""
    refused = not_carried(entry.body_type, (BodyType.TEXT, BodyType.BYTES))  # NATS carries a payload
    if refused is not None:
        raise refused
    message = entry.message()
    try:
        record = signed(codec(route.spec.format).encode(message, origin), origin, key)
        headers = nats_headers(record)
    except FormatError as error:
        reason = SoftFailureReason.CONVERSION_FAILED
        raise SoftFailure(reason, f"format {route.spec.format.value}: {error}") from None
    assert route.spec.nats_subject is not None  # jmsToNats routes have one (config/route.py)
    reply = None
    if message.reply_to is not None:
        correlation = message.correlation_id or message.message_id or ""
        back = WayBack(message.reply_to, correlation, route.name)
        reply = reply_subject(origin, back, key, expiry(message.expiration, now))
    return NatsPublish(route.spec.nats_subject, record.value or b"", headers, reply)
