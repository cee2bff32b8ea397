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

`Outage` times a source's failing calls: backoff between attempts, a log line at most every
`LOG_EVERY_SECONDS`, and `BridgeStopped` once the calls have been failing for `jms.reconnect.windowSeconds`.

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
import time
from collections.abc import Callable
from typing import Protocol

from bridge_job.config import JmsSource
from bridge_job.errors import BridgeStopped
from bridge_job.jms import BatchConsumer, JmsConnection, JmsError
from bridge_job.message import JmsMessage

log = logging.getLogger("jmsbridge.ingest")

BACKOFF_SECONDS = (0.5, 1.0, 2.0, 5.0, 10.0)
LOG_EVERY_SECONDS = 10.0


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


class OutageListener(Protocol):
    """Told when an outage starts and when it ends (health.JmsHealth reports them to the operator)."""

    def failing(self, what: str, error: BaseException) -> None: ...

    def back(self, what: str) -> None: ...


class Outage:
    """How long the calls of one source have been failing; stops the bridge past the window."""

    def __init__(
        self,
        what: str,
        window_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        listener: OutageListener | None = None,
    ) -> None:
        self.what = what
        self.window = window_seconds
        self.clock = clock
        self.listener = listener
        self.since: float | None = None
        self.attempts = 0
        self._logged_at: float | None = None

    def failed(self, error: BaseException) -> None:
        """Count a failure: BridgeStopped once failing for `window` seconds, else a (rate-limited) log."""
        now = self.clock()
        if self.since is None:
            self.since, self.attempts = now, 0
            if self.listener is not None:
                self.listener.failing(self.what, error)
        self.attempts += 1
        elapsed = now - self.since
        if elapsed >= self.window:
            raise BridgeStopped(
                f"{self.what}: failing for {elapsed:.0f}s, which is jms.reconnect.windowSeconds "
                f"({self.window:.0f}) or more: {error}: bring the broker back, or raise the window"
            )
        if self._logged_at is None or now - self._logged_at >= LOG_EVERY_SECONDS:
            self._logged_at = now
            log.warning(
                "%s: %s; batch rolled back, reconnecting (attempt %d, failing for %.0fs of %.0fs allowed)",
                self.what,
                error,
                self.attempts,
                elapsed,
                self.window,
            )

    def backoff(self) -> float:
        """How long to wait before the next attempt: growing, and never past the end of the window."""
        wait = BACKOFF_SECONDS[min(max(self.attempts - 1, 0), len(BACKOFF_SECONDS) - 1)]
        if self.since is None:
            return wait
        return min(wait, max(self.since + self.window - self.clock(), 0.0))

    def clear(self) -> None:
        """A call succeeded: the outage, if any, is over."""
        if self.since is not None:
            log.info(
                "%s: back after %.0fs and %d failed attempts",
                self.what,
                self.clock() - self.since,
                self.attempts,
            )
            self.since, self._logged_at = None, None
            if self.listener is not None:
                self.listener.back(self.what)


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
