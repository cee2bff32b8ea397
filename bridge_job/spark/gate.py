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

Once open, the gate also carries the instance's tenure: the lease's holder and `acquireTime`, and until
when this tenure is valid on `CLOCK_MONOTONIC` (shared by every process of the machine), which the driver
moves on after each renewal. Each planning checks it (`still_open`) and plans nothing once it is over or
the gate is shut: a driver whose Python is frozen while its JVM runs on (a zombie) would otherwise go on
planning intervals for its executors after another instance took over.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from bridge_job.faults.stops import BridgeStopped, LeadershipLost
from bridge_job.formats.journal import Epoch

OPEN = "open"
SHUT = "shut"
POLL_SECONDS = 0.05  # a read of a small local file: nothing next to the lease wait it shortens


@dataclass(frozen=True)
class Tenure:
    """The lease this instance holds: its holder and `acquireTime`, and until when (`time.monotonic()`)
    the instance believes it leads, that is, its last renewal's start plus the renew deadline."""

    holder: str
    acquired: str
    valid_until: float


class Gate:
    """The gate file, written by the driver alone. Once shut it stays shut: a renewal that comes after
    the job shut it (as it stops) must not open it again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()  # the renewal thread opens it again, the main thread shuts it
        self._shut = False
        self._epoch: dict[str, object] | None = None
        self._opened = False  # by the takeover (or the start without a lease), not yet by a renewal

    @classmethod
    def new(cls, directory: Path) -> Gate:
        """A closed gate of this process alone: one left by an earlier run (a restarted standby sharing
        the work directory) must not let this one's queries through."""
        handle, name = tempfile.mkstemp(prefix="lease-gate-", dir=directory)
        os.close(handle)
        return cls(Path(name))

    def open(self, tenure: Tenure | None = None, epoch: Epoch | None = None) -> None:
        """Let the queries through; with the lease's `tenure`, only while it lasts (again after each
        renewal, `renew`). Without one (no lease) for as long as the job runs. The instance's journal
        `epoch`, given once, travels on with each opening: the ingest's tasks write it."""
        with self._lock:
            if epoch is not None:
                self._epoch = asdict(epoch)
            self._opened = True
            self._open(tenure)

    def renew(self, tenure: Tenure | None) -> None:
        """After a renewal: the tenure it extended, once the gate is open. A renewal while the takeover has
        not opened it yet (the ingest tasks' journal ids are fenced first, within the patience) must not let
        the queries through before their epoch is there."""
        with self._lock:
            if self._opened:
                self._open(tenure)

    def _open(self, tenure: Tenure | None) -> None:
        if self._shut:
            return
        content: dict[str, object] = {"state": OPEN}
        if tenure is not None:
            content["tenure"] = asdict(tenure)
        if self._epoch is not None:
            content["epoch"] = self._epoch
        self._set(content)

    def shut(self) -> None:
        with self._lock:
            self._shut = True
            self._set({"state": SHUT})

    def _set(self, content: dict[str, object]) -> None:
        written = self.path.with_name(self.path.name + ".new")
        written.write_text(json.dumps(content))
        written.replace(self.path)  # at once: a reader sees the old state or the new one

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def wait_at(path: str | None, sleep: Callable[[float], None] = time.sleep) -> None:
    """In a planning process: return once the gate at `path` is open (at once without a gate); raise
    BridgeStopped when it is shut or when the process that started this one is gone."""
    if not path:
        return
    parent = os.getppid()
    while True:
        state, _ = _read(Path(path))
        if state == OPEN:
            return
        if state == SHUT or os.getppid() != parent:
            raise BridgeStopped("the standby stopped before it held the lease; its queries never ran")
        sleep(POLL_SECONDS)


def still_open(path: str | None, clock: Callable[[], float] = time.monotonic) -> None:
    """In a planning process, before each plan: raise LeadershipLost when the gate at `path` was shut (the
    driver lost the lease, or stops) or the tenure it carries is over (the driver has not renewed it in
    time, and may be frozen). Nothing to check without a gate."""
    if not path:
        return
    state, tenure = _read(Path(path))
    if state != OPEN:
        raise LeadershipLost("the driver shut its queries' gate: it lost the lease or stops")
    if tenure is not None and clock() >= tenure.valid_until:
        raise LeadershipLost(
            f"the tenure of {tenure.holder} (lease acquired {tenure.acquired}) is over: the driver has not "
            "renewed the lease in time, and plans nothing more"
        )


def epoch_at(path: str | None) -> Epoch | None:
    """In a planning process: the journal epoch the driver's open gate carries (None: none yet)."""
    if not path:
        return None
    try:
        epoch = json.loads(Path(path).read_text() or "{}").get("epoch")
    except FileNotFoundError:
        return None
    return None if epoch is None else Epoch(**epoch)


def _read(path: Path) -> tuple[str, Tenure | None]:
    """The gate's state, and the tenure an open one carries (None: no lease)."""
    try:
        content = json.loads(path.read_text() or "{}")
    except FileNotFoundError:
        return "", None
    tenure = content.get("tenure")
    return str(content.get("state", "")), None if tenure is None else Tenure(**tenure)
