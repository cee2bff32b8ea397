"""The signed way back of a JMS request to NATS (pure): what the bridge signs comes back, nothing else does.

The attacks are those of a NATS client that may publish on the bridge's reply subjects: an unsigned
subject of the old form, a MAC it made up, a genuine MAC over a payload it altered, a subject of another
bridge or signed with another key; a genuine subject replayed after it expired, or with its deadline
moved. The clock is the `now` the service passes.
"""

from __future__ import annotations

import base64
import json

import pytest

from bridge_job.message import Destination, DestinationKind
from bridge_job.routing.nats_replies import (
    CLOCK_SKEW_SECONDS,
    LONGEST_WAIT_SECONDS,
    WayBack,
    expiry,
    replies_subject,
    reply_subject,
    way_back,
)
from bridge_job.signing import MAC_BYTES, mac

KEY = b"the bridge's key"
REQUESTER = Destination(DestinationKind.QUEUE, "ID:host-1-40000-1700000000000-1:1:1")
BACK = WayBack(REQUESTER, "ID:host-1-40000-1700000000000-1:1:1:1:1", "ask")
NOW = 1_800_000_000.0  # unix seconds
EXPIRES = int(NOW) + 30


def token(fields: dict[str, str | int]) -> str:
    """A way back written as the bridge writes it, by hand."""
    return base64.urlsafe_b64encode(json.dumps(fields, separators=(",", ":")).encode()).rstrip(b"=").decode()


TO_ANOTHER_QUEUE = token({"to": "queue://payments", "c": "c-1", "r": "ask", "e": EXPIRES})


def test_a_signed_way_back_comes_back_whole() -> None:
    subject = reply_subject("orders", BACK, KEY, EXPIRES)
    prefix, signature, _ = subject.rsplit(".", 2)
    assert prefix == "_JMSBRIDGE.orders.reply"
    assert len(signature) == 22 == len(base64.urlsafe_b64encode(bytes(MAC_BYTES)).rstrip(b"="))
    assert way_back(subject, "orders", KEY, NOW) == BACK
    assert len(subject) < 512  # a temporary queue and a JMSMessageID: far under NATS's control line


def test_the_service_hears_every_subject_under_the_prefix() -> None:
    """`>` takes the old one-token form and longer forgeries too: they are dropped and counted, not lost
    unheard."""
    assert replies_subject("orders") == "_JMSBRIDGE.orders.reply.>"


@pytest.mark.parametrize(
    ("subject", "error"),
    [
        (f"_JMSBRIDGE.orders.reply.{TO_ANOTHER_QUEUE}", "unsigned"),  # the form before signing
        (f"_JMSBRIDGE.orders.reply.{'A' * 22}.{TO_ANOTHER_QUEUE}", "does not verify"),
        (f"_JMSBRIDGE.orders.reply.{'A' * 22}.{TO_ANOTHER_QUEUE}.x", "unsigned"),
        (f"_JMSBRIDGE.orders.reply..{TO_ANOTHER_QUEUE}", "does not verify"),
        ("_JMSBRIDGE.orders.reply.", "unsigned"),
        ("_INBOX.orders.reply.x.y", "unsigned"),
    ],
)
def test_a_subject_the_bridge_did_not_sign_names_no_way_back(subject: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        way_back(subject, "orders", KEY, NOW)


def test_a_genuine_mac_does_not_carry_an_altered_payload() -> None:
    signature = reply_subject("orders", BACK, KEY, EXPIRES).rsplit(".", 2)[1]
    with pytest.raises(ValueError, match="does not verify"):
        way_back(f"_JMSBRIDGE.orders.reply.{signature}.{TO_ANOTHER_QUEUE}", "orders", KEY, NOW)


def test_a_way_back_is_good_only_for_its_bridge_and_its_key() -> None:
    billing = reply_subject("billing", BACK, KEY, EXPIRES)
    moved = billing.replace("_JMSBRIDGE.billing.", "_JMSBRIDGE.orders.")  # another bridge's, same key
    with pytest.raises(ValueError, match="does not verify"):
        way_back(moved, "orders", KEY, NOW)
    with pytest.raises(ValueError, match="does not verify"):
        way_back(reply_subject("orders", BACK, b"another key", EXPIRES), "orders", KEY, NOW)


def test_a_subject_is_good_until_its_deadline_and_the_clock_skew_past_it() -> None:
    subject = reply_subject("orders", BACK, KEY, EXPIRES)
    assert way_back(subject, "orders", KEY, EXPIRES + CLOCK_SKEW_SECONDS) == BACK
    with pytest.raises(ValueError, match=r"expired at 2027-01-15T08:00:30\+00:00 \(unix 1800000030\)"):
        way_back(subject, "orders", KEY, EXPIRES + CLOCK_SKEW_SECONDS + 0.5)


def test_a_moved_deadline_does_not_verify() -> None:
    """The deadline is under the MAC: a replayer cannot push it back."""
    signature, old = reply_subject("orders", BACK, KEY, EXPIRES).rsplit(".", 2)[1:]
    later = token({"to": REQUESTER.uri(), "c": BACK.correlation_id, "r": "ask", "e": EXPIRES + 86_400})
    assert later != old
    with pytest.raises(ValueError, match="does not verify"):
        way_back(f"_JMSBRIDGE.orders.reply.{signature}.{later}", "orders", KEY, NOW)


def test_a_signed_subject_without_a_deadline_is_refused() -> None:
    """As a bridge signed them before subjects expired: good forever, so no longer good at all."""
    old_token = token({"to": REQUESTER.uri(), "c": "c-1", "r": "ask"})
    signature = mac(KEY, b"nats-reply", b"orders", old_token.encode())  # as the bridge signed it then
    with pytest.raises(ValueError, match="no deadline: made before reply subjects expired"):
        way_back(f"_JMSBRIDGE.orders.reply.{signature}.{old_token}", "orders", KEY, NOW)


@pytest.mark.parametrize(
    ("expiration_ms", "expires"),
    [
        (0, int(NOW) + LONGEST_WAIT_SECONDS),  # no time to live: the longest any request waits
        (int(NOW * 1000) + 10_500, int(NOW) + 11),  # the requester's time to live, to the next second
        (int(NOW * 1000) + 2 * LONGEST_WAIT_SECONDS * 1000, int(NOW) + LONGEST_WAIT_SECONDS),
        (int(NOW * 1000) - 5_000, int(NOW) - 5),  # expired in the journal: born expired
    ],
)
def test_a_subject_expires_with_its_request_and_within_the_longest_wait(
    expiration_ms: int, expires: int
) -> None:
    assert expiry(expiration_ms, NOW) == expires


def test_an_expiring_subject_stays_short() -> None:
    """The deadline costs the subject 20 characters."""
    unexpiring = len(token({"to": REQUESTER.uri(), "c": BACK.correlation_id, "r": "ask"}))
    assert len(reply_subject("orders", BACK, KEY, EXPIRES).rsplit(".", 1)[1]) - unexpiring <= 20
