"""CPU accounting for benchmarks: CPU seconds (user + system) of named process groups over a window.

A group is a set of root processes, each with or without its descendants. `CpuSampler` walks every group
every `interval` seconds (psutil) and keeps, per process (pid and start time, so a reused pid is a new
process), the first and the last `cpu_times()` it saw:

- a process alive at `start()` is charged what it used after that moment (its value then is subtracted);
- a process born inside the window is charged from 0;
- a process that exits inside the window keeps the last value seen (what it used between that sample and
  its exit is lost: at most one interval's worth, and only for processes that exit before `stop()`).

A process counts in the first group that reaches it, in the order the groups are given (so a group of a
parent process without descendants can sit beside groups of its children).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import psutil


@dataclass(frozen=True)
class Root:
    pid: int
    descendants: bool = True


@dataclass
class ProcessUse:
    pid: int
    group: str
    label: str
    first: float  # CPU seconds when first seen (0 for a process born inside the window)
    last: float

    @property
    def used(self) -> float:
        return max(self.last - self.first, 0.0)


@dataclass
class GroupUse:
    name: str
    cpu_s: float
    processes: list[ProcessUse] = field(default_factory=list)

    def by_label(self) -> dict[str, float]:
        """CPU seconds per process label, largest first."""
        totals: dict[str, float] = {}
        for p in self.processes:
            totals[p.label] = totals.get(p.label, 0.0) + p.used
        return dict(sorted(totals.items(), key=lambda item: -item[1]))


Labeler = Callable[[psutil.Process, int], str]


def default_label(process: psutil.Process, root: int) -> str:
    """A short name: `driver python` (the bridge job), `java`, `python daemon`, `python worker` (PySpark's),
    `python SCRIPT`, or the process name."""
    try:
        name = process.name()
        cmdline = " ".join(process.cmdline())
        parent = process.parent()
        parent_cmdline = " ".join(parent.cmdline()) if parent is not None else ""
    except psutil.Error:
        return "?"
    if "pyspark.daemon" in cmdline or "pyspark/daemon.py" in cmdline:
        # The daemon forks its workers: they keep its command line.
        daemon_parent = "pyspark.daemon" in parent_cmdline or "pyspark/daemon.py" in parent_cmdline
        return "python worker" if daemon_parent else "python daemon"
    if "pyspark.worker" in cmdline or "pyspark/worker.py" in cmdline:
        return "python worker"
    if name.startswith("python"):
        if process.pid == root and "jmsbridge" in cmdline:
            return "driver python"  # `python -m jmsbridge job`: the Spark driver, ingest (JPype JVM) included
        return f"python {_script(cmdline)}".rstrip()
    if name == "java":
        return "java"
    return str(name)


def _script(cmdline: str) -> str:
    """`jms_sender.py` of `python bench/jms_sender.py ...`, `daemon` of `python -m pyspark.daemon`."""
    words = cmdline.split()[1:]
    for i, word in enumerate(words):
        if word == "-m" and i + 1 < len(words):
            return words[i + 1].rsplit(".", 1)[-1]
        if not word.startswith("-"):
            return word.rsplit("/", 1)[-1]
    return ""


class CpuSampler:
    """Samples the CPU time of process groups in a background thread between `start()` and `stop()`."""

    def __init__(
        self, groups: Mapping[str, Sequence[Root]], interval: float = 0.5, label: Labeler = default_label
    ) -> None:
        self.groups = groups
        self.interval = interval
        self.label = label
        self._known: dict[tuple[int, float], ProcessUse] = {}
        self._handles: dict[tuple[int, float], psutil.Process] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._window_started = False
        self.started_at = 0.0
        self.stopped_at = 0.0

    def start(self) -> CpuSampler:
        """Take the values at the start of the window (subtracted later) and begin sampling."""
        self._sample()  # everything alive now: its current value is its starting point
        self._window_started = True
        self.started_at = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, GroupUse]:
        """End the window: one last sample, then the CPU seconds used per group."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        self.stopped_at = time.monotonic()
        return self.result()

    @property
    def seconds(self) -> float:
        return max(self.stopped_at - self.started_at, 1e-9)

    def result(self) -> dict[str, GroupUse]:
        with self._lock:
            uses = {name: GroupUse(name, 0.0) for name in self.groups}
            for use in self._known.values():
                group = uses[use.group]
                group.cpu_s += use.used
                group.processes.append(use)
        for group in uses.values():
            group.processes.sort(key=lambda p: -p.used)
        return uses

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _members(self) -> list[tuple[str, int, psutil.Process]]:
        members: list[tuple[str, int, psutil.Process]] = []
        seen: set[int] = set()
        for group, roots in self.groups.items():
            for root in roots:
                try:
                    process = psutil.Process(root.pid)
                    tree = [process, *process.children(recursive=True)] if root.descendants else [process]
                except psutil.Error:
                    continue
                for p in tree:
                    if p.pid not in seen:
                        seen.add(p.pid)
                        members.append((group, root.pid, p))
        return members

    def _sample(self) -> None:
        members = self._members()
        for group, root, process in members:
            try:
                key = (process.pid, process.create_time())
                handle = self._handles.setdefault(key, process)  # one handle: psutil caches its identity
                times = handle.cpu_times()
            except psutil.Error:
                continue  # gone meanwhile: its last sample (if any) stands
            value = times.user + times.system
            with self._lock:
                use = self._known.get(key)
                if use is None:
                    label = self.label(handle, root)
                    first = value if not self._window_started else 0.0
                    self._known[key] = ProcessUse(handle.pid, group, label, first, value)
                else:
                    use.last = value
