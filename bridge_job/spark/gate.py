"""A warm standby's queries: started before it holds the lease, held until it does (docs/failover.md).

Starting a query is most of what a takeover waited for after the lease: Spark's query thread, the
source's planning process (a new Python process importing the job) and its Kafka client. A warm standby
therefore starts its queries while it stands by, and each source's planning waits in the source's
`streamReader` (`wait_at`), which Spark calls before it reads the query's checkpoint: nothing is planned,
checkpointed or run, and the checkpoint the active instance writes is read as it stands when the gate
opens. (Later would be too late: Spark runs a batch left uncommitted without asking the source.) The
driver opens the gate once it holds the lease (the former active stopped writing the checkpoint by then)
and then takes the journal, or shuts it when it stops as the standby; a shut gate fails the planning, and
the query ends.

The gate is a file in the driver's work directory: planning processes are the driver JVM's children, on
its machine. One whose parent is gone (the driver was killed) stops waiting.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bridge_job.faults.stops import BridgeStopped

OPEN = "open"
SHUT = "shut"
POLL_SECONDS = 0.05  # a read of a small local file: nothing next to the lease wait it shortens


@dataclass(frozen=True)
class Gate:
    path: Path

    @classmethod
    def new(cls, directory: Path) -> Gate:
        """A closed gate of this process alone: one left by an earlier run (a restarted standby sharing
        the work directory) must not let this one's queries through."""
        handle, name = tempfile.mkstemp(prefix="lease-gate-", dir=directory)
        os.close(handle)
        return cls(Path(name))

    def open(self) -> None:
        self._set(OPEN)

    def shut(self) -> None:
        self._set(SHUT)

    def _set(self, state: str) -> None:
        written = self.path.with_name(self.path.name + ".new")
        written.write_text(state)
        written.replace(self.path)  # at once: a reader sees the old state or the new one

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def wait_at(path: str | None, sleep: Callable[[float], None] = time.sleep) -> None:
    """In a planning process: return once the gate at `path` is open (at once without a gate); raise
    BridgeStopped when it is shut or when the process that started this one is gone."""
    if not path:
        return
    parent = os.getppid()
    gate = Path(path)
    while True:
        try:
            state = gate.read_text()
        except FileNotFoundError:
            state = ""
        if state == OPEN:
            return
        if state == SHUT or os.getppid() != parent:
            raise BridgeStopped("the standby stopped before it held the lease; its queries never ran")
        sleep(POLL_SECONDS)
