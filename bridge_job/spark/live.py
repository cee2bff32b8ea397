"""Live figures of real-time tasks: each task tells the driver what it has done so far, while it runs.

A real-time task's summary row reaches the driver only when its interval ends (spark/intervals.py), which
may be minutes away. So each task also sends its row as it stands, once a second while it changes and
every `HEARTBEAT_SECONDS` anyway, with its state: `moving` (it moved records since its last report),
`idle` (caught up) or `waiting` (it waits out an outage, bridge_job/outages.py). A report is one UDP
datagram to the driver's `LiveReceiver`, whose address travels with the task's partition: a lost one
costs a second's delay, and a task never waits for the driver.

The driver counts the difference to what it counted of that task before (`LiveCounts`), and at the
interval's end only what the reports did not count: each record once, whether its reports came or not.
A task's rows are named by `ROW_NAMES` (its partition, or its route) and told apart from the same
partition's earlier and later tasks by when they started.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from bridge_job import outages

log = logging.getLogger("jmsbridge.telemetry")

REPORT_SECONDS = 1.0
HEARTBEAT_SECONDS = 5.0
STALE_SECONDS = 3 * HEARTBEAT_SECONDS  # a task not heard from for this long is not shown
STATES = ("moving", "idle", "waiting")

Row = dict[str, Any]
ROW_NAMES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "egress": lambda row: str(row["partition"]),
    "ingress": lambda row: f"{row['topic']}:{row['partition']}",
    "nats": lambda row: str(row["route"]),
}


# The numbers of a row that are no counts: where it is, when it ran, a maximum.
NOT_COUNTS = frozenset(
    {"partition", "start", "end", "started_ms", "ended_ms", "max_latency_ms", "max_round_trip_ms"}
)


def difference(row: Mapping[str, Any], before: Mapping[str, Any] | None) -> Row:
    """`row`'s counts less `before`'s (counts per bucket too); anything else as in `row`."""
    if before is None:
        return dict(row)
    changed: Row = {}
    for name, value in row.items():
        earlier = before.get(name)
        if name in NOT_COUNTS or isinstance(value, bool):
            changed[name] = value
        elif isinstance(value, int) and isinstance(earlier, int):
            changed[name] = max(value - earlier, 0)
        elif isinstance(value, list) and isinstance(earlier, list) and len(value) == len(earlier):
            changed[name] = [max(int(now) - int(then), 0) for now, then in zip(value, earlier, strict=True)]
        else:
            changed[name] = value
    return changed


class LiveCounts:
    """The driver's book of what it counted of each running task, and each task's last state."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._counted: dict[tuple[str, str, int], Row] = {}  # (query, row name, started_ms) -> row
        self._finished: dict[tuple[str, str], int] = {}  # (query, row name) -> started_ms of the last row
        self._states: dict[tuple[str, str], tuple[str, float]] = {}

    def report(
        self, query: str, name: str, started_ms: int, row: Mapping[str, Any], state: str
    ) -> Row | None:
        """What a report adds to what was counted of its task; None when its interval's row came already."""
        with self._lock:
            if started_ms <= self._finished.get((query, name), -1):
                return None
            key = (query, name, started_ms)
            added = difference(row, self._counted.get(key))
            self._counted[key] = dict(row)
            self._states[(query, name)] = (state, self._clock())
            return added

    def finish(self, query: str, rows: Sequence[Mapping[str, Any]]) -> list[Row]:
        """An interval's rows, less what the reports counted of them. Earlier tasks of the same rows (a
        failed attempt) are forgotten: what they reported stays counted."""
        named = ROW_NAMES[query]
        uncounted = []
        with self._lock:
            for row in rows:
                name, started = named(row), int(row["started_ms"] or 0)
                uncounted.append(difference(row, self._counted.pop((query, name, started), None)))
                self._finished[(query, name)] = max(started, self._finished.get((query, name), -1))
                for key in [k for k in self._counted if k[:2] == (query, name) and k[2] < started]:
                    del self._counted[key]
        return uncounted

    def states(self) -> dict[tuple[str, str], str]:
        """Each task's state as it last reported it, for the tasks heard from lately."""
        now = self._clock()
        with self._lock:
            return {task: state for task, (state, at) in self._states.items() if now - at < STALE_SECONDS}


def bound(host: str) -> socket.socket:
    """A UDP socket on a free port of `host`; for every address (""), IPv6 and IPv4 alike where the
    host has IPv6 (one dual-stack socket), IPv4 only where it has not."""
    if not host and socket.has_ipv6:
        try:
            dual = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        except OSError:  # IPv6 turned off in the kernel
            pass
        else:
            try:
                dual.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
                dual.bind(("::", 0))
                return dual
            except OSError:
                dual.close()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    single = socket.socket(family, socket.SOCK_DGRAM)
    single.bind((host or "0.0.0.0", 0))
    return single


class LiveReceiver:
    """The driver's end: reports in, handed to `on_report`, on a port of its own (any free one)."""

    def __init__(self, on_report: Callable[[Row], None], host: str = "") -> None:
        self._on_report = on_report
        self._socket = bound(host)
        self._socket.settimeout(0.5)  # how soon `stop` is seen
        self.port = int(self._socket.getsockname()[1])
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="live-reports", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                data = self._socket.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            try:
                self._on_report(json.loads(data))
            except Exception:  # telemetry never stops the bridge
                log.debug("cannot take a live report", exc_info=True)

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=2)
        self._socket.close()


class LiveReporter:
    """A task's end: its rows as they stand (`rows()`, named per `ROW_NAMES`), sent from a thread of its
    own while the task runs."""

    def __init__(
        self, address: str, query: str, started_ms: int, rows: Callable[[], Mapping[str, Row]]
    ) -> None:
        host, _, port = address.rpartition(":")
        found = socket.getaddrinfo(host.strip("[]"), int(port), type=socket.SOCK_DGRAM)
        family, _, _, _, to = found[0]  # the driver's host: a name, an IPv4 or an IPv6 address
        self._to: tuple[Any, ...] = to
        self._query, self._started_ms, self._rows = query, started_ms, rows
        self._socket = socket.socket(family, socket.SOCK_DGRAM)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="live-report", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last: Mapping[str, Row] = {}
        sent_at = time.monotonic()
        while not self._stopping.wait(REPORT_SECONDS):
            try:
                rows = self._rows()
                moved = rows != last
                if not moved and time.monotonic() - sent_at < HEARTBEAT_SECONDS:
                    continue
                state = "waiting" if outages.failing() else "moving" if moved else "idle"
                for name, row in rows.items():
                    report = {"query": self._query, "name": name, "started_ms": self._started_ms}
                    self._socket.sendto(json.dumps(report | {"state": state, "row": row}).encode(), self._to)
                last, sent_at = rows, time.monotonic()
            except Exception:  # telemetry never fails the task
                log.debug("cannot send a live report", exc_info=True)

    def close(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=2)
        self._socket.close()


@contextlib.contextmanager
def reporting(
    address: str, query: str, started_ms: int, rows: Callable[[], Mapping[str, Row]]
) -> Iterator[None]:
    """Live reports of the task's rows to `address` ("host:port") while the block runs; none without
    one (micro-batch mode) or when the driver's host cannot be resolved."""
    reporter = None
    if address:
        try:
            reporter = LiveReporter(address, query, started_ms, rows)
        except OSError as error:
            log.warning("no live figures from this task: cannot reach %s: %s", address, error)
    try:
        yield
    finally:
        if reporter is not None:
            reporter.close()
