"""Loop marks: what the ingress stamps on a message it sends to JMS, so that the egress never sends it back.

The ingress (Kafka -> JMS, NATS -> JMS) marks a message with this bridge (ORIGIN_PROPERTY) and where it came
from (KAFKA_TOPIC_PROPERTY, or NATS_SUBJECT_PROPERTY); the egress drops a message so marked when its route
would write it back there. The origin header on Kafka records (formats/native.py, ORIGIN_HEADER) does the
same in the other direction.

Any JMS producer may set those properties, so the mark carries a MAC with the bridge's key
(bridge_job/signing.py) in ORIGIN_MAC_PROPERTY, over the origin, the topic or subject and the body, so that
it cannot be copied onto another message either: only a message whose MAC verifies is a loop
(`loop_mark`); one that merely claims the bridge's origin is sent on like any other.

The egress reads the message from the journal, whose value is the body in the `native` encoding (text as
UTF-8, bytes as they are, none empty: formats/native.py); the ingress signs the body it sends in that
encoding too (`body_bytes`), so both MACs cover the same bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from bridge_job.formats.journal import JournalEntry
from bridge_job.message import JmsMessage, Property
from bridge_job.signing import Forgeries, LoopMark, bridge_key, mac, vouched

# What the ingress marks a message it sends with: this bridge, and the topic the record was read from.
ORIGIN_PROPERTY = "JmsBridgeOrigin"


KAFKA_TOPIC_PROPERTY = "KafkaTopic"


# The NATS subject a message from NATS was published on (natsToJms).
NATS_SUBJECT_PROPERTY = "NatsSubject"

# The MAC that vouches for the origin, the topic or subject and the body (a JMS identifier: letters only).
ORIGIN_MAC_PROPERTY = "JmsBridgeOriginMac"
_SIGNED = b"jms-origin"  # what the MAC signs besides the mark: no other mark of the bridge signs alike


def body_bytes(body: str | bytes | None) -> bytes:
    """A body as the journal's value holds it (formats/native.py, `encode`)."""
    if isinstance(body, str):
        return body.encode(errors="surrogatepass")  # one the journal could not hold: no loop either way
    return body or b""


def _signed(origin: str, source: str, body: bytes) -> tuple[bytes, ...]:
    return (_SIGNED, origin.encode(), source.encode(), body)


def signed(message: JmsMessage, source_property: str, key: bytes) -> JmsMessage:
    """`message`, which names its origin and where it came from (`source_property`), with the MAC that
    vouches for both."""
    origin = str(message.properties[ORIGIN_PROPERTY].value)
    source = str(message.properties[source_property].value)
    vouch = mac(key, *_signed(origin, source, body_bytes(message.body)))
    return dataclasses.replace(
        message, properties=message.properties | {ORIGIN_MAC_PROPERTY: Property.string(vouch)}
    )


def loop_mark(entry: JournalEntry, source_property: str, source: str, bridge_id: str, key: bytes) -> LoopMark:
    """Whether a journalled message is one this bridge sent to JMS from `source`, the topic or subject
    (`source_property`) its route would now write it to."""
    if entry.property_text(ORIGIN_PROPERTY) != bridge_id or entry.property_text(source_property) != source:
        return LoopMark.NONE
    given = entry.property_text(ORIGIN_MAC_PROPERTY)
    return vouched(key, given, *_signed(bridge_id, source, entry.record.value or b""))


class LoopGuard:
    """The loop rule of every flow that sends on what it reads: a message whose loop mark verifies (LOOP) is
    one this bridge sent from where it would now go, and is dropped; one that only claims so (FORGED) is
    sent on like any other, and said in the log (`forged`: what it is, rate-limited by `Forgeries`).

    It holds the bridge's key (signing.py), with which the flow signs its own marks too."""

    def __init__(self, forged: str) -> None:
        self.key = bridge_key()
        self.forged = Forgeries(forged)

    def is_loop(self, mark: LoopMark, where: Callable[[], str]) -> bool:
        """Whether to drop the message `mark` was read from; `where` names it, asked only for a forgery."""
        if mark is LoopMark.FORGED:
            self.forged.seen(where())
        return mark is LoopMark.LOOP
