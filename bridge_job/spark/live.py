"""Live figures of real-time tasks: each task tells the driver what it has done so far, while it runs.

A real-time task's summary row reaches the driver only when its interval ends (spark/intervals.py), which
may be minutes away. So each task also sends its row as it stands, once a second while it changes and
every `HEARTBEAT_SECONDS` anyway, with its state: `moving` (it moved records since its last report),
`idle` (caught up) or `waiting` (it waits out an outage, bridge_job/faults/outages.py). A report is one UDP
datagram to the driver's `LiveReceiver`, whose address travels with the task's partition: a lost one
costs a second's delay, and a task never waits for the driver.

The driver counts the difference to what it counted of that task before (`LiveCounts`), and at the
interval's end only what the reports did not count: each record once, whether its reports came or not.
A task's rows are named by `ROW_NAMES` (its partition, or its route) and told apart from the same
partition's earlier and later tasks by when they started.

Anyone on the pod network can send the receiver a datagram, so the driver takes a report only when it is
- signed: each run of a query gets a random key (`LiveReceiver.for_tasks`), which reaches its tasks with
  their partitions and nowhere else; a datagram carries an HMAC-SHA256 of its bytes under it, and one
  without the MAC of a current run is dropped unread. A query started again gets a new key: the tasks of
  its earlier run cannot report into the new one;
- about what the driver planned: the key's query, a row named as one of the run's `names` (the journal's
  partitions, the kafkaToJms routes' partitions, the routes), asked again when a report names another;
- believable: a report carries its task's cumulative counts and a sequence number; it is refused when it
  is older than the last one taken, lowers a count, or claims more than a task does in the time it has
  run (`unbelievable`). Nothing is lost by a refusal: the interval's row, which comes over Spark's own
  channel, counts what the reports did not.
The driver's book is bounded: at most `MAX_ATTEMPTS` tasks per row name, the planned names only, and a
task is forgotten when its interval's row came, all of a query's when it ends. What it counted stays in
the counters, which only grow. Every refusal is counted by reason (`REFUSALS`).

The receiver listens on the address the driver's executors reach it at (`driver_address`), and takes
datagrams of at most `MAX_DATAGRAM` bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import itertools
import json
import logging
import math
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from bridge_job.faults import outages
from bridge_job.spark import latency

log = logging.getLogger("jmsbridge.telemetry")

REPORT_SECONDS = 1.0
HEARTBEAT_SECONDS = 5.0
STALE_SECONDS = 3 * HEARTBEAT_SECONDS  # a task not heard from for this long is not shown
STATES = ("moving", "idle", "waiting")

MAX_DATAGRAM: Final = 4096  # bytes; a report (one row) is under 1 KiB
MAC_BYTES: Final = 32  # HMAC-SHA256
NAMES_SECONDS = 10.0  # how often a report naming no planned row makes the driver ask again what it planned
MAX_ATTEMPTS = 4  # tasks of one row held at once: the running one, the last interval's, failed attempts
# What a task can do, as far as the driver believes a report: a count grows by at most RECORDS_PER_SECOND
# per second the task has run (some 25 times what one task moved at best, docs/egress.md), its routing
# time by a second per second (one thread), a sum of latencies by MAX_LATENCY_MS per latency it counts.
RECORDS_PER_SECOND = 100_000
ROUTING_NS_PER_SECOND = 1_000_000_000
MAX_LATENCY_MS = 7 * 24 * 3600 * 1000  # a week, Kafka's default retention
LATENCY_SUMS = {"latency_ms": "latency_buckets", "round_trip_ms": "round_trip_buckets"}  # sum: its counts
CLOCK_SKEW_MS = 10_000  # how far a task's clock may be off the driver's

# Why the driver refused a datagram: too big; no MAC of a current run; no report; not a row the run planned
# (or of another query); of a task that ended; no newer than the last taken; lower, or beyond belief.
Refusal = Literal[
    "oversized", "unsigned", "malformed", "unknown", "ended", "replayed", "lowered", "excessive"
]
REFUSALS: tuple[Refusal, ...] = get_args(Refusal)

Row = dict[str, Any]
ROW_NAMES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "ingest": lambda row: str(row["partition"]),
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


@dataclass(frozen=True)
class Report:
    """A task's row as it stands, as the receiver took it: signed with the key of run `run` of `query`."""

    query: str
    run: int
    name: str
    started_ms: int
    seq: int  # the task's reports, numbered: a replayed one is no newer than the last taken
    state: str
    row: Row


def _counts(row: Mapping[str, Any]) -> Iterator[tuple[str, list[int]]]:
    """The counts of a row, each as a list (one value, or one per bucket)."""
    for name, value in row.items():
        if name in NOT_COUNTS or isinstance(value, bool):
            continue
        if isinstance(value, int):
            yield name, [value]
        elif isinstance(value, list):
            yield name, value


def _most(name: str, row: Mapping[str, Any], seconds: float) -> float:
    """The most a count of `row` can be after its task ran `seconds`."""
    if name in LATENCY_SUMS:
        return sum(row.get(LATENCY_SUMS[name]) or ()) * MAX_LATENCY_MS
    return seconds * (ROUTING_NS_PER_SECOND if name == "routing_ns" else RECORDS_PER_SECOND)


def unbelievable(row: Mapping[str, Any], before: Mapping[str, Any] | None, seconds: float) -> Refusal | None:
    """Why a task's row, `seconds` into its run, cannot follow `before` (what was taken of it): a count
    lower than before, or one beyond what a task does in that time; None when it can."""
    taken = dict(_counts(before or {}))
    for name, values in _counts(row):
        if any(now < then for now, then in zip(values, taken.get(name, ()), strict=False)):
            return "lowered"
        if max(values, default=0) > _most(name, row, seconds):
            return "excessive"
    return None


class LiveCounts:
    """The driver's book of what it counted of each running task, and each task's last state."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, wall_ms: Callable[[], float] | None = None
    ) -> None:
        self._clock = clock
        self._wall_ms = wall_ms or (lambda: time.time() * 1000)
        self._lock = threading.Lock()
        self._counted: dict[tuple[str, str, int], tuple[Row, int]] = {}  # task -> (row, seq) taken
        self._finished: dict[tuple[str, str], int] = {}  # (query, row name) -> started_ms of the last row
        self._states: dict[tuple[str, str], tuple[str, float]] = {}
        self._runs: dict[str, int] = {}  # the run of each query whose tasks are in the book
        self._ended: dict[str, int] = {}  # the last run of each query that ended

    def report(self, report: Report) -> Row | Refusal:
        """What a report adds to what was counted of its task, or why it adds nothing."""
        query, started = report.query, report.started_ms
        task = (query, report.name)
        with self._lock:
            current = self._runs.get(query, -1)
            if report.run < current or report.run <= self._ended.get(query, -1):
                return "ended"  # a task of a run of the query that ended
            if report.run > current:  # the query started again: the tasks of its last run ended with it
                self._drop(query)
                self._runs[query] = report.run
            if started <= self._finished.get(task, -1):
                return "ended"  # its interval's row came already
            before = self._counted.get((*task, started))
            if before is not None and report.seq <= before[1]:
                return "replayed"
            seconds = max(self._wall_ms() - started, 0) / 1000 + CLOCK_SKEW_MS / 1000
            refused = unbelievable(report.row, before[0] if before else None, seconds)
            if refused is not None:
                return refused
            if before is None:
                self._make_room(task)
            self._counted[(*task, started)] = (dict(report.row), report.seq)
            self._states[task] = (report.state, self._clock())
            return difference(report.row, before[0] if before else None)

    def _make_room(self, task: tuple[str, str]) -> None:
        """Room for one more task of the row: its oldest goes, what it reported stays counted."""
        started = sorted(k[2] for k in self._counted if k[:2] == task)
        for oldest in started[: max(len(started) - MAX_ATTEMPTS + 1, 0)]:
            del self._counted[(*task, oldest)]
            self._finished[task] = max(oldest, self._finished.get(task, -1))  # not taken again

    def finish(self, query: str, rows: Sequence[Mapping[str, Any]]) -> list[Row]:
        """An interval's rows, less what the reports counted of them. Earlier tasks of the same rows (a
        failed attempt) are forgotten: what they reported stays counted."""
        named = ROW_NAMES[query]
        uncounted = []
        with self._lock:
            for row in rows:
                name, started = named(row), int(row["started_ms"] or 0)
                counted = self._counted.pop((query, name, started), None)
                uncounted.append(difference(row, counted[0] if counted else None))
                self._finished[(query, name)] = max(started, self._finished.get((query, name), -1))
                for key in [k for k in self._counted if k[:2] == (query, name) and k[2] < started]:
                    del self._counted[key]
        return uncounted

    def forget(self, query: str) -> None:
        """The query ended: its tasks leave the book, and their late reports are refused."""
        with self._lock:
            self._drop(query)
            self._ended[query] = max(self._runs.get(query, -1), self._ended.get(query, -1))

    def _drop(self, query: str) -> None:
        self._counted = {task: taken for task, taken in self._counted.items() if task[0] != query}
        self._finished = {task: ms for task, ms in self._finished.items() if task[0] != query}
        self._states = {task: state for task, state in self._states.items() if task[0] != query}

    def tasks(self) -> int:
        """How many tasks the book holds counts of."""
        with self._lock:
            return len(self._counted)

    def states(self) -> dict[tuple[str, str], str]:
        """Each task's state as it last reported it, for the tasks heard from lately."""
        now = self._clock()
        with self._lock:
            return {task: state for task, (state, at) in self._states.items() if now - at < STALE_SECONDS}


def _mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).digest()


def sealed(key: bytes, report: Mapping[str, Any]) -> bytes:
    """A report as a datagram: the MAC of its JSON under `key`, then the JSON."""
    body = json.dumps(report, separators=(",", ":")).encode()
    return _mac(key, body) + body


def _plain(value: Any) -> bool:
    """A value a task's row may hold: a flag, a count, a name, or counts per latency bucket."""
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return 0 <= value < 2**63
    if isinstance(value, str):
        return len(value) <= 255
    if not isinstance(value, list) or len(value) != len(latency.BOUNDS) + 1:
        return False
    return all(type(count) is int and _plain(count) for count in value)


def parsed(body: bytes, query: str, run: int) -> Report | Refusal:
    """The report of a datagram signed with the key of run `run` of `query`, or why it is none."""
    try:
        message = json.loads(body)
    except ValueError:
        return "malformed"
    if not isinstance(message, dict):
        return "malformed"
    name, started, seq, state, row = (message.get(k) for k in ("name", "started_ms", "seq", "state", "row"))
    if not (
        isinstance(name, str)
        and type(started) is int
        and type(seq) is int
        and _plain(started)
        and _plain(seq)
        and state in STATES
        and isinstance(row, dict)
        and all(_plain(value) for value in row.values())
    ):
        return "malformed"
    if message.get("query") != query:
        return "unknown"  # a task of this run speaks of another query's rows
    try:
        named = ROW_NAMES[query](row)
    except KeyError:
        return "malformed"
    return Report(query, run, name, started, seq, state, row) if named == name else "unknown"


@dataclass
class _Run:
    """A run of a query, as the receiver knows it: its key, when it began, and the rows it planned."""

    query: str
    number: int
    key: bytes
    began_ms: float
    names: Callable[[], Collection[str]]
    known: frozenset[str] = frozenset()
    asked: float = -math.inf  # when `names` was last asked (monotonic)

    def plans(self, name: str) -> bool:
        """Whether the run planned a row of this name; asks again, at most every NAMES_SECONDS, when not."""
        if name in self.known or time.monotonic() - self.asked < NAMES_SECONDS:
            return name in self.known
        self.asked = time.monotonic()
        try:
            self.known = frozenset(self.names())
        except Exception:  # Kafka or the config unreadable for now: the names as they were
            log.debug("cannot tell the %s query's planned rows", self.query, exc_info=True)
        return name in self.known


def driver_address(environ: Mapping[str, str] = os.environ) -> str:
    """The address executors reach this driver at: the pod's on Kubernetes (Spark sets
    SPARK_DRIVER_BIND_ADDRESS from the pod's status.podIP), the one Spark is told to use (SPARK_LOCAL_IP),
    else loopback: a job in local mode, whose tasks run on this host. (A job run by hand on a remote
    cluster without either gets its figures per interval.)"""
    return environ.get("SPARK_DRIVER_BIND_ADDRESS") or environ.get("SPARK_LOCAL_IP") or "127.0.0.1"


def bound(host: str) -> socket.socket:
    """A UDP socket on a free port of `host` (a name, an IPv4 or an IPv6 address)."""
    family, kind, protocol, _, where = socket.getaddrinfo(host.strip("[]"), 0, type=socket.SOCK_DGRAM)[0]
    single = socket.socket(family, kind, protocol)
    single.bind(where)
    return single


def _joined(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


_listening: dict[int, LiveReceiver] = {}  # this process's receivers by port: how `live_option` finds one
_listening_lock = threading.Lock()


class LiveReceiver:
    """The driver's end: reports in, on a port of its own (any free one) of `host` (`driver_address()`),
    handed to `on_report` once taken, or why not."""

    def __init__(self, on_report: Callable[[Report | Refusal], None], host: str | None = None) -> None:
        self._on_report = on_report
        self._socket = bound(driver_address() if host is None else host)
        self._socket.settimeout(0.5)  # how soon `stop` is seen
        self.host, self.port = str(self._socket.getsockname()[0]), int(self._socket.getsockname()[1])
        self._runs: dict[str, _Run] = {}  # each query's current run
        self._numbers = itertools.count()
        self._lock = threading.Lock()
        self._logged: set[Refusal] = set()
        with _listening_lock:
            _listening[self.port] = self
        log.info("task reports (live figures) taken at %s: UDP, signed per query run", self.address)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="live-reports", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return _joined(self.host, self.port)

    def for_tasks(self, query: str, names: Callable[[], Collection[str]]) -> str:
        """A new run of `query`, whose tasks' rows are `names()`: the `live` option of its tasks (the key
        of the run, then where to report). The query's earlier run's key is no longer good."""
        key = secrets.token_bytes(32)
        with self._lock:
            self._runs[query] = _Run(query, next(self._numbers), key, time.time() * 1000, names)
        return f"{key.hex()}@{self.address}"

    def take(self, datagram: bytes) -> Report | Refusal:
        """The report of a datagram, or why the driver does not take it."""
        if len(datagram) > MAX_DATAGRAM:
            return "oversized"
        mac, body = datagram[:MAC_BYTES], datagram[MAC_BYTES:]
        with self._lock:
            runs = list(self._runs.values())
        run = next((r for r in runs if hmac.compare_digest(mac, _mac(r.key, body))), None)
        if run is None:
            return "unsigned"
        report = parsed(body, run.query, run.number)
        if isinstance(report, str):
            return report
        now_ms = time.time() * 1000
        if not run.began_ms - CLOCK_SKEW_MS <= report.started_ms <= now_ms + CLOCK_SKEW_MS:
            return "unknown"  # no task of this run
        return report if run.plans(report.name) else "unknown"

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                datagram, sender = self._socket.recvfrom(MAX_DATAGRAM + 1)  # one more: oversized
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            try:
                taken = self.take(datagram)
                if isinstance(taken, str) and taken not in self._logged:
                    self._logged.add(taken)
                    log.warning(
                        "refused a task report from %s: %s (each refusal is counted in "
                        "jmsbridge_telemetry_rejected_total; the next ones of this reason are not logged)",
                        sender,
                        taken,
                    )
                self._on_report(taken)
            except Exception:  # telemetry never stops the bridge
                log.debug("cannot take a live report", exc_info=True)

    def stop(self) -> None:
        with _listening_lock:
            _listening.pop(self.port, None)
        self._stopping.set()
        self._thread.join(timeout=2)
        self._socket.close()


def live_option(address: str, query: str, names: Callable[[], Collection[str]]) -> str:
    """The `live` option of a new run of `query`'s tasks (`LiveReceiver.for_tasks`), from this process's
    receiver that listens on `address`'s port (the port is what the job hands its queries); "" when none
    does."""
    port = address.rpartition(":")[2]
    with _listening_lock:
        receiver = _listening.get(int(port)) if port.isdigit() else None
    return receiver.for_tasks(query, names) if receiver is not None else ""


class LiveReporter:
    """A task's end: its rows as they stand (`rows()`, named per `ROW_NAMES`), signed and sent from a
    thread of its own while the task runs. `live` is the option the driver gave its partition."""

    def __init__(self, live: str, query: str, started_ms: int, rows: Callable[[], Mapping[str, Row]]) -> None:
        key, _, where = live.rpartition("@")
        self._key = bytes.fromhex(key)
        if len(self._key) < 16:
            raise ValueError("the driver gave no key to sign reports with")
        host, _, port = where.rpartition(":")
        found = socket.getaddrinfo(host.strip("[]"), int(port), type=socket.SOCK_DGRAM)
        family, _, _, _, to = found[0]  # the driver's address: a name, an IPv4 or an IPv6 address
        self._to: tuple[Any, ...] = to
        self.query, self.started_ms, self.rows = query, started_ms, rows
        self._socket = socket.socket(family, socket.SOCK_DGRAM)
        self._seq = itertools.count(1)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="live-report", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last: Mapping[str, Row] = {}
        sent_at = time.monotonic()
        while not self._stopping.wait(REPORT_SECONDS):
            try:
                rows = self.rows()
                moved = rows != last
                if not moved and time.monotonic() - sent_at < HEARTBEAT_SECONDS:
                    continue
                state = "waiting" if outages.failing() else "moving" if moved else "idle"
                for name, row in rows.items():
                    report = {"query": self.query, "name": name, "started_ms": self.started_ms}
                    report |= {"seq": next(self._seq), "state": state, "row": row}
                    self._socket.sendto(sealed(self._key, report), self._to)
                last, sent_at = rows, time.monotonic()
            except Exception:  # telemetry never fails the task
                log.debug("cannot send a live report", exc_info=True)

    def close(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=2)
        self._socket.close()


@contextlib.contextmanager
def reporting(
    live: str, query: str, started_ms: int, rows: Callable[[], Mapping[str, Row]]
) -> Iterator[None]:
    """Live reports of the task's rows to the driver, as `live` (the partition's option: a key and
    "host:port") says, while the block runs; none without it (micro-batch mode) or when the driver's host
    cannot be resolved."""
    reporter = None
    if live:
        try:
            reporter = LiveReporter(live, query, started_ms, rows)
        except (OSError, ValueError) as error:  # the key never reaches a log line
            log.warning("no live figures from this task: cannot reach %s: %s", live.rpartition("@")[2], error)
    try:
        yield
    finally:
        if reporter is not None:
            reporter.close()
