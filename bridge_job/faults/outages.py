"""Outages: how long the job waits for a system that does not answer, and what it says meanwhile.

One patience for the whole job, `spec.outages.patienceSeconds` (default 300 s), for every system it talks
to (the JMS broker, Kafka, the Kubernetes API) and at every phase: at start, while the driver plans a
batch, while the ingest journals, while a task reads, writes, commits or sends. A call that fails because
the system does not answer is asked again with a growing pause (`BACKOFF_SECONDS`); the job logs the
outage once per `LOG_EVERY_SECONDS`, not per retry, tells its listener (the health report the operator
turns into a condition), and says when the system is back. Past the patience it stops with one
`jmsbridge stopped:` line naming the system, how long it was unreachable and the last cause (exit 2),
which Kubernetes restarts with backoff. An answer that no retry changes (authentication or authorization
refused, a missing topic) is not an outage: the caller stops at once.

`Outage` times the failures of one caller; `patiently` wraps one call in it, for every system alike
(kafka/waiting.py says what a Kafka failure is, nats/link.py a NATS one, the JMS flows a JMS one).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Protocol, TypeVar

from bridge_job.faults.stops import BridgeStopped

log = logging.getLogger("jmsbridge.outages")

PATIENCE_SETTING = "spec.outages.patienceSeconds"
BACKOFF_SECONDS = (0.5, 1.0, 2.0, 5.0, 10.0, 15.0)
LOG_EVERY_SECONDS = 10.0

T = TypeVar("T")

# This process's outages under way, for the live task reports (spark/live.py): an abandoned one (its call
# failed for good) leaves with its object.
_failing: weakref.WeakSet[Outage] = weakref.WeakSet()
_failing_lock = threading.Lock()


def failing() -> list[str]:
    """What this process is waiting for now: the outages under way, each by its `what`."""
    with _failing_lock:
        return sorted(outage.what for outage in _failing if outage.since is not None)


class OutageListener(Protocol):
    """Told when an outage starts and when it ends (kube/health.py reports them to the operator)."""

    def failing(self, what: str, error: object) -> None: ...

    def back(self, what: str) -> None: ...


class Outage:
    """How long the calls of one caller (`what`: the system and what it was doing) have been failing;
    stops the bridge once that reaches the patience."""

    def __init__(
        self,
        what: str,
        patience_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        listener: OutageListener | None = None,
        hint: str = "bring it back",
        describe: Callable[[BaseException | str], str] = str,
    ) -> None:
        self.what = what
        self.hint = hint
        self.describe = describe
        self.patience = patience_seconds
        self.clock = clock
        self.listener = listener
        self.since: float | None = None
        self.attempts = 0
        self._logged_at: float | None = None

    def failed(self, error: BaseException | str, doing: str = "reconnecting") -> None:
        """Count a failure: BridgeStopped once failing for the patience, else a (rate-limited) log line.
        The listener and the log get `describe(error)`: a library's wrapping left out."""
        now = self.clock()
        error = self.describe(error)
        if self.since is None:
            self.since, self.attempts = now, 0
            with _failing_lock:
                _failing.add(self)
            if self.listener is not None:
                self.listener.failing(self.what, error)
        self.attempts += 1
        elapsed = now - self.since
        if elapsed >= self.patience:
            raise BridgeStopped(
                f"{self.what}: unreachable for {elapsed:.0f}s, the patience of {PATIENCE_SETTING}="
                f"{self.patience:.0f}: {error}; {self.hint} (a restart goes on from where the job stopped: "
                "nothing is lost), or raise the patience"
            )
        if self._logged_at is None or now - self._logged_at >= LOG_EVERY_SECONDS:
            self._logged_at = now
            log.warning(
                "%s: %s; %s (attempt %d, failing for %.0fs of %.0fs allowed)",
                self.what,
                error,
                doing,
                self.attempts,
                elapsed,
                self.patience,
            )

    def left(self) -> float:
        """Seconds of patience left (all of it when nothing is failing)."""
        return self.patience if self.since is None else max(self.since + self.patience - self.clock(), 0.0)

    def backoff(self) -> float:
        """How long to wait before the next attempt: growing, and never past the end of the patience."""
        wait = BACKOFF_SECONDS[min(max(self.attempts - 1, 0), len(BACKOFF_SECONDS) - 1)]
        return min(wait, self.left())

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
            with _failing_lock:
                _failing.discard(self)
            if self.listener is not None:
                self.listener.back(self.what)


def patiently(
    call: Callable[[float], T],
    outage: Outage,
    transient: Callable[[BaseException], bool],
    pause: Callable[[float], None] = time.sleep,
    ask_seconds: float = 30.0,
    doing: str = "asking again",
    after_failure: Callable[[BaseException], None] = lambda error: None,
) -> T:
    """`call(timeout)`'s answer, asked again while it fails with a `transient` error, within the outage's
    patience. `timeout` is how long one attempt may take: at most `ask_seconds`, never past the patience.
    A failure that is not transient propagates at once; `transient` may raise BridgeStopped itself (a
    refusal that looks like an outage). `after_failure`: what to mend before the next attempt (a
    connection dropped), `doing` says it in the log."""
    while True:
        try:
            answer = call(max(1.0, min(ask_seconds, outage.left())))
        except Exception as error:
            if not transient(error):
                raise
            outage.failed(error, doing)
            after_failure(error)
            pause(outage.backoff())
            continue
        outage.clear()
        return answer
