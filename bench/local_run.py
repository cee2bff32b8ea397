"""The benchmarks' harness: brokers, helper processes, phases of load, and the figures both report.

bench/egress.py and bench/ingress.py measure the same way in opposite directions: a `Harness` runs the
baseline loop and then the bridge job (`compare`), each through a warm-up, a throughput window and a
latency phase (`send_and_watch`: a load process, a watch of the destination, CPU sampled over the
window); a benchmark says what it sends and watches and how its job's batch lines read. The figures both
report (quantiles, CPU per message, batch lines, the bridge over the baseline) are worked out here.

`local_brokers()` starts ActiveMQ Classic (persistent store) and Apache Kafka on free ports and a work dir
for the job's files; on the way out it stops both and removes the work dir, unless the run failed or
JMSBRIDGE_BENCH_KEEP is set (then it says where the job's files, their logs among them, are kept).
`bridge_document()` is the tests' harness document with the bridge's own trigger interval (the harness
sets 100 ms for the tests) unless the benchmark asks for one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TextIO

from bench.cpu import CpuSampler, GroupUse, Root
from bridge_job.config import SparkSpec
from jmsbridge.kafka_server import KafkaBroker
from jmsbridge.local import ActiveMqBroker, BridgeJob
from testbed import harness

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
LATENCY_FRACTION = 0.5  # the latency phase's rate, of the baseline's measured throughput
PATH_GROUPS = ("path", "activemq", "kafka")  # "path total"; "load_generator" is reported apart
BATCH_LINE = re.compile(r"\bbatch (\{.*\})\s*$")
# The bridge's own interval, which `bridge_document` leaves to the bridge (the tests set theirs).
TASK_INTERVAL_SECONDS = SparkSpec.model_fields["task_interval_seconds"].default


def notes(bench: str) -> Callable[[str], None]:
    """A benchmark's progress lines, on stderr (stdout carries its one JSON line)."""

    def note(text: str) -> None:
        print(f"[{bench} {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    return note


@contextmanager
def local_brokers(note: Callable[[str], None]) -> Iterator[tuple[ActiveMqBroker, KafkaBroker, Path]]:
    work = Path(tempfile.mkdtemp(prefix="jmsbridge-bench-"))
    activemq, kafka = ActiveMqBroker(), KafkaBroker(optimized=True)
    ok = False
    try:
        activemq.start()
        kafka.start()
        note(f"brokers up: ActiveMQ {activemq.url}, Kafka {kafka.bootstrap}; work dir {work}")
        yield activemq, kafka, work
        ok = True
    finally:
        activemq.cleanup()
        kafka.cleanup()
        if ok and not os.environ.get("JMSBRIDGE_BENCH_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
        else:
            note(f"{'done' if ok else 'failed'}: the job's files are kept in {work}")


def bridge_document(
    name: str,
    activemq: ActiveMqBroker,
    kafka: KafkaBroker,
    sources: list[dict[str, Any]],
    trigger_ms: int | None,
    **spec: Any,
) -> dict[str, Any]:
    document = harness.bridge_document(name, activemq, kafka, sources, **spec)
    document["spec"]["spark"].pop("triggerIntervalMs", None)
    document["spec"]["spark"].pop(
        "taskIntervalSeconds", None
    )  # the tests' setting: benchmarks use the default
    if trigger_ms is not None:
        document["spec"]["spark"]["triggerIntervalMs"] = trigger_ms
    return document


def bridge_spec(args: argparse.Namespace) -> dict[str, Any]:
    """`spec.spark.mode` and, when given, `spec.spark.taskIntervalSeconds` and
    `spec.jms.ingest.maxBatchDelayMs`, from the benchmark's options."""
    spec: dict[str, Any] = {"spark": {"mode": args.mode}}
    if getattr(args, "task_interval_seconds", None) is not None:
        spec["spark"]["taskIntervalSeconds"] = args.task_interval_seconds
    if getattr(args, "ingest_delay_ms", None) is not None:
        spec["jms"] = {"ingest": {"maxBatchDelayMs": args.ingest_delay_ms}}
    return spec


class Child:
    """A bench/ helper process speaking the `BENCH ...` line protocol on stdout (see jms_sender.py)."""

    def __init__(self, name: str, argv: list[str]) -> None:
        self.name = name
        self.process = subprocess.Popen(
            [sys.executable, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            start_new_session=True,  # a Ctrl-C of the benchmark reaches it through stop(), in order
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read(self, stream: TextIO) -> None:
        for line in stream:
            if line.startswith("BENCH "):
                self._lines.put(line[len("BENCH ") :].strip())
            else:  # the JMS client's own output: not ours to print on stdout
                sys.stderr.write(f"[{self.name}] {line}")
        self._lines.put(None)

    def line(self, timeout: float) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"{self.name}: nothing said within {timeout:.0f}s") from None
        if line is None:
            raise RuntimeError(f"{self.name} exited with {self.process.wait()} before saying anything")
        return line

    def wait_ready(self, timeout: float = 120) -> None:
        line = self.line(timeout)
        if line != "ready":
            raise RuntimeError(f"{self.name}: expected 'ready', got {line!r}")

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def check(self) -> None:
        code = self.process.poll()
        if code is not None and code != 0:
            raise RuntimeError(f"{self.name} exited with {code}")

    def stop(self, timeout: float = 30) -> None:
        """Close its stdin (a sender that was not given the go signal exits; one sending finishes)."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()  # the helpers stop when stdin closes
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)


@dataclass
class PathUnderTest:
    name: str
    topic: str
    queue: str
    tree_pid: int
    check: Callable[[], None]
    job_log: Path | None = None  # the bridge job's log, for its batch lines


class Collected(Protocol):
    """What a phase's collector knows: when each `seq` was first seen, and the latencies."""

    first_seen: dict[int, float]
    latencies_ms: list[float]
    last_seen: float

    @property
    def duplicates(self) -> int: ...


@dataclass
class Phase:
    collector: Collected
    complete: bool = False
    first_send: float = 0.0  # wall-clock times the sender reported
    last_send: float = 0.0
    uses: dict[str, GroupUse] | None = None
    cpu_seconds: float = 0.0

    def first_seen(self) -> float:
        return min(self.collector.first_seen.values())


class Watching(NamedTuple):
    """A watch of a path's destination: `run(timeout, check)` until the collector has all, then `close`."""

    run: Callable[[float, Callable[[], None]], bool]
    close: Callable[[], None]


def checks(path: PathUnderTest, load: Child) -> Callable[[], None]:
    def check() -> None:
        path.check()
        load.check()

    return check


class Harness(ABC):
    """One benchmark's phases against both of its paths (the baseline loop, the bridge job)."""

    name: str  # the benchmark, for `note`
    load_words: tuple[str, str]  # how the load is announced: ("sending", "messages")
    arrival: str  # what arrives at the destination: "record"

    def __init__(self, args: argparse.Namespace, activemq: ActiveMqBroker, kafka: KafkaBroker) -> None:
        self.args = args
        self.activemq = activemq
        self.kafka = kafka

    def note(self, text: str) -> None:
        notes(self.name)(text)

    @abstractmethod
    def load(self, path: PathUnderTest, count: int, run: str, rate: float) -> Child:
        """The load process of a phase, connected and waiting for `go`."""

    @abstractmethod
    def collector(self, run: str, count: int) -> Collected: ...

    @abstractmethod
    def watch(self, path: PathUnderTest, collector: Collected) -> Watching:
        """A watch of the path's destination, placed before the load starts."""

    @abstractmethod
    def baseline(self) -> dict[str, Any]:
        """The baseline loop's figures (`run_baseline`)."""

    @abstractmethod
    def bridge(self, work: Path, rate: float) -> dict[str, Any]:
        """The bridge job's figures (`run_bridge`), its latency phase at `rate`."""

    def close(self) -> None:  # noqa: B027 (optional: a harness that holds nothing more has nothing to do)
        """Let go of what the harness holds beyond the phases."""

    def jms_url(self) -> str:
        """The JMS connection exactly as the bridge makes it (failover: URL and its options)."""
        document = bridge_document("baseline", self.activemq, self.kafka, [{"queue": "unused"}], None)
        return str(document["spec"]["jms"]["connectionFactory"]["properties"]["brokerURL"])

    def more(self, bridge: dict[str, Any]) -> dict[str, Any]:
        """Figures of further paths for the JSON line, against the bridge's; none by default."""
        return {}

    def spark_spec(self) -> dict[str, Any]:
        """`spec.spark` of the bridge under test: its mode, and its batch limit when one is given."""
        limit = self.args.max_records_per_batch
        return {"mode": self.args.mode} | ({} if limit is None else {"maxRecordsPerBatch": limit})

    def compare(self, work: Path) -> tuple[dict[str, Any], dict[str, Any], float]:
        """Baseline first, then the bridge at the baseline's latency rate: both figures and that rate."""
        try:
            baseline = self.baseline()
            rate = LATENCY_FRACTION * baseline["throughput_msg_s"]
            return baseline, self.bridge(work, rate), rate
        finally:
            self.close()

    @abstractmethod
    def destination(self, path: PathUnderTest) -> str:
        """Where the path delivers (for messages)."""

    @abstractmethod
    def logged_records(self, log: Path, start: int, end: int) -> int:
        """The records the job's batch lines of this direction between two offsets of its log carry."""

    @abstractmethod
    def batch_figures(self, log: Path, start: int, end: int) -> dict[str, Any]:
        """The figures of the job's batch lines of this direction between two offsets of its log."""

    def window_figures(self, phase: Phase, messages: int) -> dict[str, Any]:
        """What the throughput window's CPU samples say."""
        assert phase.uses is not None
        return cpu_figures(phase.uses, phase.cpu_seconds, messages)

    def throughput(self, path: PathUnderTest) -> dict[str, Any]:
        """The figures of the warm-up and the throughput window."""
        figures: dict[str, Any] = {}
        warmup = self.args.warmup_messages
        after = f"{self.arrival}_after_s"
        if warmup > 0:
            phase = self.send_and_watch(path, f"{path.name}-warmup", warmup)
            if not phase.complete:
                raise RuntimeError(f"{path.name}: the warm-up messages did not all arrive")
            figures["warmup"] = {
                "messages": warmup,
                f"first_{after}": round(phase.first_seen() - phase.first_send, 3),
                f"last_{after}": round(phase.collector.last_seen - phase.first_send, 3),
            }
        n = self.args.messages
        # Batches of the window: logged after the warm-up's and up to the window's last record.
        log = path.job_log
        log_start = logged_up_to(log, warmup, self.logged_records) if log is not None else 0
        phase = self.send_and_watch(path, f"{path.name}-throughput", n, cpu=True)
        if not phase.complete or phase.uses is None:
            raise RuntimeError(f"{path.name}: the {n} messages did not all reach {self.destination(path)}")
        window = phase.collector.last_seen - phase.first_send
        figures |= {
            "messages": n,
            "window_s": round(window, 3),
            "throughput_msg_s": round(n / window, 1),
            "sender_msg_s": round(n / max(phase.last_send - phase.first_send, 1e-3), 1),
            f"first_{after}": round(phase.first_seen() - phase.first_send, 3),
            "duplicates": phase.collector.duplicates,
        }
        figures |= self.window_figures(phase, n)
        if log is not None:
            log_end = logged_up_to(log, warmup + n, self.logged_records)
            figures["batches"] = self.batch_figures(log, log_start, log_end)
        self.note(
            f"{path.name}: {figures['throughput_msg_s']} msg/s over {figures['window_s']} s, "
            f"{figures['cpu_s_per_1000']} CPU s / 1000 msg ({figures['cpu_s']})"
        )
        return figures

    @abstractmethod
    def latency(self, path: PathUnderTest, rate: float, throughput: float) -> dict[str, Any]:
        """The figures of the latency phase, at `rate`."""

    def run_baseline(
        self, topic: str, queue_name: str, argv: list[str], name: str = "baseline"
    ) -> dict[str, Any]:
        """The baseline loop's figures, its latency phase at LATENCY_FRACTION of its own throughput."""
        loop = Child(f"{name} loop", argv)
        try:
            loop.wait_ready()
            self.note(f"{name}: running")
            path = PathUnderTest(name, topic, queue_name, loop.pid, loop.check)
            figures = self.throughput(path)
            throughput = figures["throughput_msg_s"]
            figures |= self.latency(path, LATENCY_FRACTION * throughput, throughput)
        finally:
            loop.stop()
        return figures

    def run_bridge(
        self, work: Path, topic: str, queue_name: str, files: list[Path], rate: float
    ) -> dict[str, Any]:
        """The bridge job's figures (from its config `files`), its latency phase at `rate`."""
        job = BridgeJob(files, work).start()
        try:
            assert job.process is not None
            job.wait_running(timeout=300)
            self.note("bridge: running")
            process = job.process

            def check() -> None:
                if process.poll() is not None:
                    tail = job.log()[-3000:]
                    raise RuntimeError(f"the bridge job exited with {process.returncode}:\n{tail}")

            path = PathUnderTest("bridge", topic, queue_name, process.pid, check, job.logs[-1])
            figures = self.throughput(path)
            figures |= self.latency(path, rate, figures["throughput_msg_s"])
        finally:
            job.stop()
        return figures

    def groups(self, path: PathUnderTest, load: Child) -> dict[str, list[Root]]:
        assert self.activemq.process is not None and self.kafka.process is not None
        return {
            "path": [Root(path.tree_pid)],
            "activemq": [Root(self.activemq.process.pid)],
            "kafka": [Root(self.kafka.process.pid)],
            # the load process, and this process (the destination's consumer) without its children
            "load_generator": [Root(load.pid), Root(os.getpid(), descendants=False)],
        }

    def send_and_watch(
        self, path: PathUnderTest, run: str, count: int, rate: float = 0.0, cpu: bool = False
    ) -> Phase:
        """Send `count` messages (full speed, or paced at `rate`) and watch the destination until all
        arrived (or the timeout passed); with `cpu`, sample the process groups over that window."""
        load = self.load(path, count, run, rate)
        phase = Phase(self.collector(run, count))
        try:
            watch = self.watch(path, phase.collector)
            sampler = CpuSampler(self.groups(path, load)) if cpu else None
            try:
                if sampler is not None:
                    sampler.start()
                load.go()
                pace = "at full speed" if rate <= 0 else f"at {rate:.0f} msg/s"
                verb, noun = self.load_words
                self.note(f"{path.name}: {verb} {count} {noun} {pace} ({run})")
                timeout = self.args.timeout + (count / rate if rate > 0 else 0.0)
                phase.complete = watch.run(timeout, checks(path, load))
            finally:
                if sampler is not None:
                    phase.uses, phase.cpu_seconds = sampler.stop(), sampler.seconds
                watch.close()
            if phase.complete:
                sent = json.loads(load.line(timeout=60))
                phase.first_send, phase.last_send = sent["first_send"], sent["last_send"]
            else:
                seen = len(phase.collector.first_seen)
                self.note(f"{path.name}: only {seen} of {count} {self.arrival}s arrived ({run})")
        finally:
            load.stop()
        return phase


def harness_options(parser: argparse.ArgumentParser, paced: str) -> None:
    """The options both benchmarks take; `paced`: what the latency phase sends."""
    parser.add_argument("--messages", type=int, default=10_000, help="messages in the throughput window")
    parser.add_argument("--latency-seconds", type=float, default=15.0, help=f"seconds of paced {paced}")
    parser.add_argument("--mode", choices=["realTime", "microBatch"], default="realTime", help="spark.mode")
    parser.add_argument("--trigger-ms", type=int, default=None, help="microBatch; default: the bridge's")
    parser.add_argument("--max-records-per-batch", type=int, default=None, help="default: the bridge's")
    parser.add_argument(
        "--warmup-messages", type=int, default=1000, help="sent through each path before its window; 0: none"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a phase may take at most")
    parser.add_argument(
        "--poll-backoff-ms",
        type=float,
        default=5.0,
        help="backoff of the Kafka consumer the benchmark reads with",
    )


def comparison(baseline: dict[str, Any], bridge: dict[str, Any]) -> dict[str, Any]:
    """The bridge's figures over the baseline's."""
    return {
        "throughput_ratio": ratio(bridge["throughput_msg_s"], baseline["throughput_msg_s"]),
        "cpu_per_message_ratio": ratio(bridge["cpu_s_per_1000"], baseline["cpu_s_per_1000"]),
        "latency_p50_ratio": ratio(bridge["latency_p50_ms"], baseline["latency_p50_ms"]),
        "latency_p99_ratio": ratio(bridge["latency_p99_ms"], baseline["latency_p99_ms"]),
        "latency_cpu_per_message_ratio": ratio(
            bridge.get("latency_cpu_s_per_1000"), baseline.get("latency_cpu_s_per_1000")
        ),
    }


def quantile(values: list[float], q: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 1)
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1], 1)


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def batch_lines(log: Path, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
    """The JSON of the job's `batch {json}` lines between two offsets of its log file (egress and
    ingress batches alike: an ingress batch's carries `sent`)."""
    with open(log, "rb") as f:
        f.seek(start)
        data = f.read() if end is None else f.read(max(end - start, 0))
    batches: list[dict[str, Any]] = []
    for line in data.decode(errors="replace").splitlines():
        match = BATCH_LINE.search(line)
        if match is None:
            continue
        try:
            figures = json.loads(match.group(1))
        except json.JSONDecodeError:
            continue
        if isinstance(figures, dict):
            batches.append(figures)
    return batches


def logged_up_to(
    log: Path, records: int, counted: Callable[[Path, int, int], int], timeout: float = 15.0
) -> int:
    """The size of the job's log once the batch lines `counted` between two of its offsets account for
    `records` records (the driver logs a batch shortly after its task committed), or after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        size = log.stat().st_size
        if counted(log, 0, size) >= records or time.monotonic() > deadline:
            return size
        time.sleep(0.2)


def cpu_figures(uses: dict[str, GroupUse], seconds: float, messages: int) -> dict[str, Any]:
    total = sum(uses[g].cpu_s for g in PATH_GROUPS)
    load = uses["load_generator"]
    return {
        "cpu_s_per_1000": round(total / messages * 1000, 3),
        "cores_busy": round(total / seconds, 2),
        "cpu_s": {name: round(use.cpu_s, 2) for name, use in uses.items()},
        "cpu_share": {g: round(uses[g].cpu_s / total, 3) if total else None for g in PATH_GROUPS},
        "path_processes_cpu_s": {
            label: round(s, 2) for label, s in uses["path"].by_label().items() if round(s, 2) > 0
        },
        "load_generator_cores_busy": round(load.cpu_s / seconds, 2),
        "cpu_window_s": round(seconds, 3),
    }


def run_and_print(
    name: str,
    args: argparse.Namespace,
    harness: Callable[[argparse.Namespace, ActiveMqBroker, KafkaBroker], Harness],
    note: Callable[[str], None],
    message_bytes: int,
    options: dict[str, Any],
) -> None:
    """Baseline and bridge on local brokers, then the benchmark's one JSON line: on stdout, which carries
    nothing else (the notes go to stderr). `options`: the benchmark's own settings, for the record."""
    stdout, sys.stdout = sys.stdout, sys.stderr
    began = time.monotonic()
    with local_brokers(note) as (activemq, kafka, work):
        bench = harness(args, activemq, kafka)
        baseline, bridge, rate = bench.compare(work)
    result = {
        "benchmark": name,
        "messages": args.messages,
        "message_bytes": message_bytes,
        **options,
        "mode": args.mode,
        "trigger_ms": args.trigger_ms,
        "max_records_per_batch": args.max_records_per_batch,
        "warmup_messages": args.warmup_messages,
        "cpu_count": os.cpu_count(),
        "latency_rate_msg_s": round(rate, 1),
        "baseline": baseline,
        "bridge": bridge,
        **comparison(baseline, bridge),
        **bench.more(bridge),
        "elapsed_s": round(time.monotonic() - began, 1),
    }
    print(json.dumps(result), file=stdout, flush=True)
