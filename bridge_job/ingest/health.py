"""The brokers' state as the ingest's tasks see it, carried to the driver in their rows.

A task on an executor has no way to the operator of its own: its row (ingest/counts.py) carries a `jms` and
a `kafka` column, and the driver tells its `ConnectionHealth` (kube/health.py: `JmsConnected` in the
bridge's status, `jmsbridge_connected`) what they say. A column is what is failing, as `what: error`
(redacted, cut to fit a live report), else `CONNECTED` once a caller got through, else `""` (the task has
not connected to JMS yet; for Kafka, nothing failed).
Rows come live (spark/live.py) and at each interval's end, so a report lost on the way is made good.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from typing import Any

from bridge_job.faults.outages import OutageListener
from bridge_job.redaction import redact

CONNECTED = "connected"
MAX_TEXT = 255  # what a live report's string may hold (spark/live.py)


class TaskHealth:
    """A task's outages of one system (the `OutageListener` of its partition's callers of it), as its
    row's column."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failing: dict[str, str] = {}  # caller -> its error
        self._through = False  # a caller got through since the task began

    def failing(self, what: str, error: object) -> None:
        with self._lock:
            self._failing.setdefault(what, redact(str(error)))

    def back(self, what: str) -> None:
        with self._lock:
            self._failing.pop(what, None)
            self._through = True

    def failing_now(self) -> bool:
        with self._lock:
            return bool(self._failing)

    def column(self) -> str:
        """The first of its callers failing, else CONNECTED once one got through, else ""."""
        with self._lock:
            if self._failing:
                what, error = min(self._failing.items())
                return f"{what}: {error}"[:MAX_TEXT]
            return CONNECTED if self._through else ""


class RowHealth:
    """The driver's side: each ingest row told to the `ConnectionHealth` of its system, one caller per
    partition (`ingest <p>`), and which partitions have connected to JMS."""

    def __init__(self, jms: OutageListener, kafka: OutageListener) -> None:
        self.listeners = {"jms": jms, "kafka": kafka}
        self._connected: set[int] = set()
        self._changed = threading.Condition()

    def heard(self, row: Mapping[str, Any]) -> None:
        partition = int(row["partition"])
        caller = f"ingest {partition}"
        for system, listener in self.listeners.items():
            said = str(row.get(system) or "")
            if said and said != CONNECTED:
                listener.failing(caller, said)
            elif said or system == "kafka":  # Kafka is told only of failures; JMS once connected
                listener.back(caller)
        if row.get("jms") == CONNECTED:
            with self._changed:
                self._connected.add(partition)
                self._changed.notify_all()

    def wait_connected(
        self, partitions: Collection[int], go_on: Callable[[], bool], poll: float = 0.25
    ) -> bool:
        """Until every one of `partitions` has connected to JMS (True), or `go_on()` says stop (False)."""
        with self._changed:
            while not set(partitions) <= self._connected:
                if not go_on():
                    return False
                self._changed.wait(poll)
            return True
