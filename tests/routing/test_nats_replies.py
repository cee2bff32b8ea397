"""The signed way back of a JMS request to NATS (pure): what the bridge signs comes back, nothing else does.

The attacks are those of a NATS client that may publish on the bridge's reply subjects: an unsigned
subject of the old form, a MAC it made up, a genuine MAC over a payload it altered, a subject of another
bridge or signed with another key.
"""

from __future__ import annotations

import base64
import json

import pytest

from bridge_job.message import Destination, DestinationKind
from bridge_job.routing.nats_replies import WayBack, replies_subject, reply_subject, way_back
from bridge_job.signing import MAC_BYTES

KEY = b"the bridge's key"
REQUESTER = Destination(DestinationKind.QUEUE, "ID:host-1-40000-1700000000000-1:1:1")
BACK = WayBack(REQUESTER, "ID:host-1-40000-1700000000000-1:1:1:1:1", "ask")


def token(fields: dict[str, str]) -> str:
    """A way back written as the bridge writes it, by hand."""
    return base64.urlsafe_b64encode(json.dumps(fields).encode()).rstrip(b"=").decode()


TO_ANOTHER_QUEUE = token({"to": "queue://payments", "c": "c-1", "r": "ask"})


def test_a_signed_way_back_comes_back_whole() -> None:
    subject = reply_subject("orders", BACK, KEY)
    prefix, signature, _ = subject.rsplit(".", 2)
    assert prefix == "_JMSBRIDGE.orders.reply"
    assert len(signature) == 22 == len(base64.urlsafe_b64encode(bytes(MAC_BYTES)).rstrip(b"="))
    assert way_back(subject, "orders", KEY) == BACK
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
        way_back(subject, "orders", KEY)


def test_a_genuine_mac_does_not_carry_an_altered_payload() -> None:
    signature = reply_subject("orders", BACK, KEY).rsplit(".", 2)[1]
    with pytest.raises(ValueError, match="does not verify"):
        way_back(f"_JMSBRIDGE.orders.reply.{signature}.{TO_ANOTHER_QUEUE}", "orders", KEY)


def test_a_way_back_is_good_only_for_its_bridge_and_its_key() -> None:
    billing = reply_subject("billing", BACK, KEY)
    moved = billing.replace("_JMSBRIDGE.billing.", "_JMSBRIDGE.orders.")  # another bridge's, same key
    with pytest.raises(ValueError, match="does not verify"):
        way_back(moved, "orders", KEY)
    with pytest.raises(ValueError, match="does not verify"):
        way_back(reply_subject("orders", BACK, b"another key"), "orders", KEY)
