"""Sending `JmsMessage`s: the Kafka -> JMS half of the adapter.

One `JmsProducer` is one session with one anonymous `MessageProducer`, so a single producer sends to
any destination (the message's own, or the one a route names). Each message's delivery mode and priority
are passed to `send`; its time-to-live is what is left until its `expiration` (an absolute time, as JMS
defines it), so a message keeps the deadline it had at its origin; one whose deadline has already passed
is sent with a time-to-live of 1 ms, for the provider to expire it rather than to keep it forever.

In a transacted producer nothing is visible to consumers until `commit`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import jpype

from bridge_job.jms.api import JmsApi
from bridge_job.jms.errors import JavaException, JmsError, jms_error
from bridge_job.jms.mapping import MessageWriter
from bridge_job.jms.sessions import SessionOwner
from bridge_job.message import Destination, JmsMessage

# ActiveMQ Classic's client takes a temporary queue it has not yet heard of from the broker's advisories
# for a deleted one, and refuses a send to it without asking the broker. A new connection hears of the
# temporary queues made before it soon after it starts: a producer this young (the first ranges after a
# start or a reconnection) waits for that before it takes the refusal as final; a queue really deleted
# (its requester gone) is refused as before once the time is up, and at once after it.
ADVISORY_SECONDS = 2.0
_UNHEARD_TEMPORARY = "Cannot publish to a deleted Destination"
_FIRST_PAUSE_SECONDS = 0.02


def time_to_live(expiration: int, now_ms: int) -> int:
    """The JMS time-to-live (ms, 0 = never) that makes a message expire at `expiration`."""
    if expiration == 0:
        return 0
    return max(expiration - now_ms, 1)


class JmsProducer(SessionOwner):
    """Sends messages in its own session, transacted or auto-acknowledged."""

    def __init__(
        self, connection: Any, api: JmsApi, transacted: bool, check_connection: Callable[[], None]
    ) -> None:
        self.transacted = transacted
        self._check_connection = check_connection
        session_class = api.type("Session")
        mode = session_class.SESSION_TRANSACTED if transacted else session_class.AUTO_ACKNOWLEDGE
        self._session: Any = None
        try:
            self._session = connection.createSession(transacted, mode)
            # An anonymous producer: the destination is chosen per message.
            no_destination = jpype.JObject(None, api.type("Destination"))
            self._producer = session_class.createProducer(self._session, no_destination)
        except JavaException as error:
            if self._session is not None:
                with contextlib.suppress(JavaException):
                    self._session.close()
            raise jms_error("cannot create a JMS producer", error) from error
        self._writer = MessageWriter(self._session)
        self._made = time.monotonic()
        self._closed = False
        self._batch = "the sent messages"
        self._owner = "the JMS producer"

    def send(self, message: JmsMessage, destination: Destination | None = None) -> str:
        """Send to `destination` (default: the message's own); returns the JMSMessageID assigned."""
        target = destination or message.destination
        pause = _FIRST_PAUSE_SECONDS
        while True:
            try:
                java_message = self._writer.build(message)
                ttl = time_to_live(message.expiration, time.time_ns() // 1_000_000)
                self._producer.send(
                    self._writer.destination(target),
                    java_message,
                    int(message.delivery_mode),
                    message.priority,
                    ttl,
                )
                return str(java_message.getJMSMessageID())
            except JavaException as error:
                if self._closed:
                    raise JmsError(f"cannot send to {target.uri()}: the producer is closed") from error
                young = time.monotonic() + pause < self._made + ADVISORY_SECONDS
                if young and _UNHEARD_TEMPORARY in str(error):
                    time.sleep(pause)  # the advisories may not have come yet (ADVISORY_SECONDS)
                    pause *= 2
                    continue
                self._check_connection()
                raise jms_error(f"cannot send to {target.uri()}", error) from error

    def __enter__(self) -> JmsProducer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
