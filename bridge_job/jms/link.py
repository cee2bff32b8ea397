"""A JMS connection of the job (the ingest's or an ingress task's), replaced when it fails, and how long
failing is tolerated.

`JmsLink` holds the one connection that every source thread of the ingest takes its consumer from. A
JMS call that fails (`JmsError`) is one of two things:

- the connection is gone (the provider reported it to the exception listener, as ActiveMQ does over a
  plain `tcp:` URL, or its `failover:` transport gave up): the first thread to see it closes the
  connection, and the next `consumer()` opens a new one;
- the connection is fine but the call failed, typically a commit that the provider rolled back after
  reconnecting underneath (ActiveMQ's failover transport: `TransactionRolledBackException ... post
  failover`): the batch is rolled back and the same consumer carries on.

Either way the broker redelivers the batch, and the egress drops what the journal already holds.

A source's failing calls are timed by an `Outage` (bridge_job/faults/outages.py): backoff between attempts, a
log line at most every ten seconds, and `BridgeStopped` once they have failed for the bridge's patience.

`Uncommitted` remembers the messages of a batch that was journalled but whose commit failed. The egress
drops only redeliveries flagged `JMSRedelivered`, and a broker that restarted does not flag them (ActiveMQ
keeps the flag in memory unless its destination policy sets `persistJMSRedelivered`): the ingest flags
them itself when they come back, so that they are deduplicated like any other redelivery.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
from collections.abc import Callable

from bridge_job.config import JmsSource
from bridge_job.jms import BatchConsumer, JmsConnection, JmsError
from bridge_job.message import JmsMessage

log = logging.getLogger("jmsbridge.ingest")


JMS_HINT = "check the JMS broker and the network to it"  # what a stop for a JMS outage tells the user


class JmsLink:
    """A JMS connection shared by threads, opened by `open_connection` when there is none."""

    def __init__(self, open_connection: Callable[[], JmsConnection]) -> None:
        self._open = open_connection
        self._lock = threading.Lock()
        self.connection: JmsConnection | None = None
        self._lost = False

    def connect(self) -> JmsConnection:
        """The connection, opened now if there is none (one attempt: JmsError when it fails)."""
        with self._lock:
            if self.connection is None:
                self.connection = self._open()
                if self._lost:
                    log.info("reconnected to %s", self.connection.where)
                self._lost = False
            return self.connection

    def consumer(self, source: JmsSource) -> BatchConsumer:
        return self.connect().consumer(source)

    def recover(self, consumer: BatchConsumer | None) -> BatchConsumer | None:
        """After a JmsError: the consumer to carry on with, its batch rolled back, or None when it went
        with its connection (then the connection is dropped and the next `consumer()` reconnects)."""
        with self._lock:
            connection = self.connection
            try:
                if connection is None:
                    raise JmsError("no connection")
                connection.check()
                if consumer is not None:
                    consumer.rollback()
                    return consumer
            except JmsError:
                if connection is not None and not _sound(connection):
                    self._drop(connection)
            if consumer is not None:
                with contextlib.suppress(JmsError):
                    consumer.close()
            return None

    def _drop(self, connection: JmsConnection) -> None:
        self.connection, self._lost = None, True
        with contextlib.suppress(JmsError):
            connection.close()

    def close(self) -> None:
        with self._lock:
            if self.connection is not None:
                self.connection.close()
                self.connection = None


def _sound(connection: JmsConnection) -> bool:
    try:
        connection.check()
    except JmsError:
        return False
    return True


class Uncommitted:
    """JMSMessageIDs journalled in batches whose JMS commit failed (the last `MAX_IDS` of them)."""

    MAX_IDS = 100_000

    def __init__(self) -> None:
        self._ids: dict[str, None] = {}  # insertion-ordered: the oldest go first

    def add(self, batch: list[JmsMessage]) -> None:
        for message in batch:
            if message.message_id is not None:
                self._ids[message.message_id] = None
        for oldest in list(self._ids)[: max(len(self._ids) - self.MAX_IDS, 0)]:
            del self._ids[oldest]

    def __len__(self) -> int:
        return len(self._ids)

    def flag(self, batch: list[JmsMessage]) -> list[JmsMessage]:
        """`batch` with the messages seen before marked redelivered, as the broker should have."""
        if not self._ids:
            return batch
        flagged = []
        for message in batch:
            if message.message_id in self._ids:
                del self._ids[message.message_id]
                if not message.redelivered:
                    message = dataclasses.replace(message, redelivered=True)
            flagged.append(message)
        return flagged
