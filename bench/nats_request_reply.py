"""NATS request/reply benchmark: NATS requesters answered by a JMS service through the bridge's natsToJms
route, against a plain nats-py -> JMS responder loop without Spark; and one-way forwarding NATS -> JMS
through both; in the same run.

    python bench/nats_request_reply.py [--rate 100] [--seconds 60] [--messages 20000] [--mode realTime]
                                       [--warmup-requests 100] [--request-timeout 10] [--forward-timeout 120]

Run from the repository root after scripts/setup.sh (needs Debian's ActiveMQ and nats-server, Kafka's jars,
pyspark, nats-py). Prints exactly one JSON line on stdout; progress goes to stderr. Takes about three
minutes with the defaults, about two with `--seconds 30`.

The brokers are started here (jmsbridge.local): nats-server, ActiveMQ Classic with its persistent store,
and Apache Kafka (the bridge's journal needs it even when it only has natsToJms routes). Both
paths use the same NATS subject, the same JMS queue and the same JMS service, one after the other:

- the JMS service, a thread of this process on its own raw javax.jms connection (bench/raw_jms.py, the
  ActiveMQ client through JPype, as a JMS application is written), answers each request on the queue with
  a TextMessage `re: <text>` to its `JMSReplyTo`, with the request's `JMSCorrelationID`;
- baseline (`DirectLoop`, in this process, no Spark): a nats-py subscriber (an event loop on a thread of
  its own) queues what it gets; a sender thread sends it to the JMS queue as the bridge does, in
  transacted batches of what has arrived (up to the bridge's `BATCH_MESSAGES`, one commit each), as
  TextMessages with the `jms.*` NATS headers as string properties; a request goes with `JMSReplyTo` a
  `TemporaryQueue` of the loop's connection and a `JMSCorrelationID` of its own; a reply thread takes the
  answers off the temporary queue (AUTO_ACKNOWLEDGE) and publishes each to its requester's reply subject;
- bridge: `jmsbridge job` (jmsbridge.local.BridgeJob, local Spark) with one natsToJms route (subject ->
  queue) and the bridge's defaults (`spark.mode` from `--mode`, real-time by default; trigger and task
  intervals not set: a NATS task hosts the process's NATS service for `taskIntervalSeconds`, 30 s, so a
  run of 30 s or more crosses at least one interval boundary). The bridge needs a JMS source: an idle
  queue. Ready once the job logs `subscribed to NATS subject`.

For each path, baseline first:

1. Request/reply: a nats-py requester (asyncio, in the main thread, one connection) sends
   `--warmup-requests` (not counted: the bridge's NATS service opens its JMS connection on its first
   message), then `--rate` x `--seconds` requests on a fixed timetable (request i is due at start +
   i / rate, whatever the earlier ones are doing: each is a task of its own, so that a slow answer does not
   hold the next request back), each with `--request-timeout`. Round trip = the loop's clock just before
   `request()` to the answer's arrival. Counted apart: `timeouts` (no answer in time), `timeout_statuses`
   (the bridge's own `408` status, at the route's `timeoutSeconds`, 30 s by default), `errors` (other
   status replies, no responders, a wrong answer). `max_send_lag_ms`: how late the latest request left
   against its timetable (this process keeping up with the rate); `slowest_due_at_s`: when the five
   slowest requests were due, in seconds from the start of the run (for the bridge,
   `started_s_after_subscribed` places the run against its first task interval, which began about when
   the job logged its subscription).
2. Forwarding: the JMS service stops; a raw JMS consumer of the queue (DUPS_OK, this process) drains it
   while a nats-py publisher sends `--messages` one-way 1 KB messages (headers `jms.run`, `jms.seq`) as
   fast as it can. Window = its first publish -> the consumer has seen the last distinct `seq`; msg/s =
   N / window. `publish_msg_s` says how fast the publisher went.

The bridge's `nats interval {json}` log lines (per finished task interval: received, requests, replies,
timeouts, ...) are summed over the run (the interval still running when the job stops is not logged), and
its log's ERROR and WARN lines counted (Spark's start-up warnings among them), the first few errors and
warnings of the bridge's own loggers quoted.

Caveats: the requester, the JMS service, the drain consumer and the baseline loop share this process (and
its GIL); the bridge runs in its own processes. The baseline commits no answer transactionally (the
bridge commits its answers once NATS has them) and sets no expiration on requests (the bridge sets the
route's timeout). Compare against the baseline of the same run; a busy machine moves both.

Goals (reported as `goals`, not asserted): at 100 requests/s, the bridge's p50 <= 100 ms and p99 <= 400
ms; its forwarding >= 0.8x the plain loop's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import queue
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import nats
import nats.errors
import yaml
from nats.aio.client import Client
from nats.aio.msg import Msg

from bench.local_run import TASK_INTERVAL_SECONDS, bridge_document, quantile, ratio
from bench.raw_jms import AUTO_ACKNOWLEDGE, DUPS_OK_ACKNOWLEDGE, connect
from bridge_job.nats_service.service import BATCH_MESSAGES, FIRST_WAIT_SECONDS
from jmsbridge.kafka_server import KafkaBroker
from jmsbridge.local import ActiveMqBroker, BridgeJob, NatsServer

T = TypeVar("T")

SUBJECT = "bench.nats"
QUEUE = "bench.nats"
IDLE_QUEUE = "bench.idle"  # the bridge's JMS source: a bridge needs one
BRIDGE = "bench-nats"
MESSAGE_BYTES = 1024
RECEIVE_MS = 100
SESSION_TRANSACTED = 0  # javax.jms.Session.SESSION_TRANSACTED
CALL_SECONDS = 30.0
GOALS = {"at_rate_per_s": 100, "p50_ms_at_most": 100, "p99_ms_at_most": 400, "forwarding_ratio_at_least": 0.8}
LOG_LEVEL = re.compile(r"\b(ERROR|WARN|WARNING)\b")
NATS_INTERVAL_LINE = re.compile(r"\bnats interval (\{.*\})\s*$")


def note(text: str) -> None:
    print(f"[nats_request_reply {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def local_brokers() -> Iterator[tuple[NatsServer, ActiveMqBroker, KafkaBroker, Path]]:
    """nats-server, ActiveMQ and Apache Kafka on free ports and a work dir, all stopped on the way out; the
    work dir (the job's files and log) is kept when the run failed."""
    work = Path(tempfile.mkdtemp(prefix="jmsbridge-bench-"))
    nats_server, activemq, kafka = NatsServer(), ActiveMqBroker(), KafkaBroker(optimized=True)
    ok = False
    try:
        nats_server.start()
        activemq.start()
        kafka.start()
        note(f"brokers up: NATS {nats_server.url}, ActiveMQ {activemq.url}, Kafka {kafka.bootstrap}")
        yield nats_server, activemq, kafka, work
        ok = True
    finally:
        for server in (nats_server, activemq, kafka):
            server.cleanup()
        if ok:
            shutil.rmtree(work, ignore_errors=True)
        else:
            note(f"failed: the job's files are kept in {work}")


# --- the JMS side ------------------------------------------------------------------------------------


class JmsService:
    """Answers each request on `queue` with `re: <text>` to its JMSReplyTo, with its JMSCorrelationID."""

    def __init__(self, url: str, queue_name: str) -> None:
        self.connection = connect(url)
        self.session = self.connection.createSession(False, AUTO_ACKNOWLEDGE)
        self.consumer = self.session.createConsumer(self.session.createQueue(queue_name))
        self.producer = self.session.createProducer(None)
        self.answered = 0
        self.without_reply_to = 0
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="jms-service", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        try:
            while not self._stop.is_set():
                request = self.consumer.receive(RECEIVE_MS)
                if request is None:
                    continue
                reply_to = request.getJMSReplyTo()
                if reply_to is None:
                    self.without_reply_to += 1
                    continue
                answer = self.session.createTextMessage(f"re: {request.getText()}")
                answer.setJMSCorrelationID(request.getJMSCorrelationID())
                self.producer.send(reply_to, answer)
                self.answered += 1
        except BaseException as error:  # reported by check()
            self.failure = error

    def check(self) -> None:
        if self.failure is not None:
            raise RuntimeError(f"the JMS service failed: {self.failure!r}")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.connection.close()


class Drain:
    """A consumer of the destination queue (DUPS_OK) that notes when it first saw each `seq` of one run."""

    def __init__(self, connection: Any, queue_name: str, run: str, expected: int) -> None:
        self.session = connection.createSession(False, DUPS_OK_ACKNOWLEDGE)
        self.consumer = self.session.createConsumer(self.session.createQueue(queue_name))
        self.run, self.expected = run, expected
        self.seen: set[int] = set()
        self.messages = 0  # of this run, duplicates included
        self.others = 0  # not of this run
        self.last_seen = 0.0  # time.monotonic() when the latest new seq came
        self.done = threading.Event()
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drain, name="drain", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while not self._stop.is_set() and not self.done.is_set():
                m = self.consumer.receive(RECEIVE_MS)
                if m is None:
                    continue
                now = time.monotonic()
                if str(m.getStringProperty("run")) != self.run:
                    self.others += 1
                    continue
                self.messages += 1
                seq = int(str(m.getStringProperty("seq")))
                if seq not in self.seen:
                    self.seen.add(seq)
                    self.last_seen = now
                    if len(self.seen) >= self.expected:
                        self.done.set()
        except BaseException as error:  # reported by check()
            self.failure = error

    def check(self) -> None:
        if self.failure is not None:
            raise RuntimeError(f"the JMS consumer failed: {self.failure!r}")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.session.close()


# --- the baseline: NATS -> JMS without Spark -----------------------------------------------------------


class DirectLoop:
    """A nats-py subscriber of `subject` that sends what it gets to the JMS queue in transacted batches,
    requests with JMSReplyTo its TemporaryQueue, and publishes the answers to the requesters."""

    def __init__(self, nats_url: str, jms_url: str, subject: str, queue_name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self.loop.run_forever, name="direct-nats", daemon=True)
        self._loop_thread.start()
        self.connection = connect(jms_url)
        self.send_session = self.connection.createSession(True, SESSION_TRANSACTED)
        self.producer = self.send_session.createProducer(self.send_session.createQueue(queue_name))
        self.reply_session = self.connection.createSession(False, AUTO_ACKNOWLEDGE)
        self.reply_queue = self.reply_session.createTemporaryQueue()
        self.reply_consumer = self.reply_session.createConsumer(self.reply_queue)
        self.incoming: queue.Queue[Msg] = queue.Queue()
        self.pending: dict[str, str] = {}  # JMSCorrelationID -> the requester's reply subject
        self.counts: Counter[str] = Counter()
        self.failure: BaseException | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.client: Client = self._call(self._connect(nats_url, subject))
        self._threads = [
            threading.Thread(target=self._guarded(work), name=f"direct-{work.__name__}", daemon=True)
            for work in (self._send_loop, self._answer_loop)
        ]
        for thread in self._threads:
            thread.start()

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(CALL_SECONDS)

    async def _connect(self, url: str, subject: str) -> Client:
        client = await nats.connect(url, error_cb=self._nats_error)
        await client.subscribe(subject, queue="direct", cb=self._on_message)
        await client.flush()
        return client

    async def _nats_error(self, error: Exception) -> None:
        self.counts[f"nats error {type(error).__name__}"] += 1

    async def _on_message(self, msg: Msg) -> None:
        self.incoming.put(msg)

    def _guarded(self, work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                work()
            except BaseException as error:  # reported by check()
                self.failure = error

        return run

    def _take(self) -> list[Msg]:
        """What has arrived, up to a transaction's worth, as the bridge's sender takes it."""
        try:
            batch = [self.incoming.get(timeout=FIRST_WAIT_SECONDS)]
        except queue.Empty:
            return []
        while len(batch) < BATCH_MESSAGES:
            try:
                batch.append(self.incoming.get_nowait())
            except queue.Empty:
                break
        return batch

    def _send_loop(self) -> None:
        while not self._stop.is_set():
            batch = self._take()
            for msg in batch:
                message = self.send_session.createTextMessage(msg.data.decode())
                for name, value in (msg.headers or {}).items():
                    if name.startswith("jms."):
                        message.setStringProperty(name[len("jms.") :], value)
                if msg.reply:
                    correlation_id = f"direct-{uuid.uuid4().hex}"
                    message.setJMSReplyTo(self.reply_queue)
                    message.setJMSCorrelationID(correlation_id)
                    with self._lock:
                        self.pending[correlation_id] = msg.reply
                self.producer.send(message)
            if batch:
                self.send_session.commit()
                self.counts["sent"] += len(batch)

    def _answer_loop(self) -> None:
        while not self._stop.is_set():
            answer = self.reply_consumer.receive(RECEIVE_MS)
            if answer is None:
                continue
            with self._lock:
                reply = self.pending.pop(str(answer.getJMSCorrelationID()), None)
            if reply is None:
                self.counts["unknown answers"] += 1
                continue
            data = str(answer.getText()).encode()
            asyncio.run_coroutine_threadsafe(self.client.publish(reply, data), self.loop)
            self.counts["answered"] += 1

    def check(self) -> None:
        if self.failure is not None:
            raise RuntimeError(f"the baseline loop failed: {self.failure!r}")

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)
        with contextlib.suppress(Exception):
            self._call(self.client.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._loop_thread.join(30)
        self.loop.close()
        self.connection.close()


# --- the load ------------------------------------------------------------------------------------------


@dataclass
class Requests:
    """What one run of requests came to."""

    count: int
    rate: float
    round_trips: dict[int, float] = field(default_factory=dict)  # request index -> ms
    timeouts: int = 0  # no answer within the request timeout
    statuses: Counter[str] = field(default_factory=Counter)  # status replies (the bridge's 408) by status
    errors: Counter[str] = field(default_factory=Counter)  # no responders, a wrong answer, ...
    max_lag_ms: float = 0.0  # the latest a request left against its timetable
    began: float = 0.0  # time.monotonic() (the loop's clock) when request 0 was due

    def figures(self) -> dict[str, Any]:
        values = list(self.round_trips.values())
        in_order = [self.round_trips[i] for i in sorted(self.round_trips)]
        half = len(in_order) // 2
        slowest = sorted(self.round_trips, key=self.round_trips.__getitem__, reverse=True)[:5]
        return {
            "requests": self.count,
            "answered": len(values),
            "timeouts": self.timeouts,
            "timeout_statuses": self.statuses.get("408", 0),
            "statuses": dict(self.statuses),
            "errors": dict(self.errors),
            "p50_ms": quantile(values, 50),
            "p99_ms": quantile(values, 99),
            "max_ms": round(max(values), 1) if values else None,
            "mean_ms": round(statistics.fmean(values), 1) if values else None,
            "p50_first_half_ms": quantile(in_order[:half], 50),
            "p50_second_half_ms": quantile(in_order[half:], 50),
            "max_send_lag_ms": round(self.max_lag_ms, 1),
            # when the slowest requests were due, in seconds from the run's start: clustered, they point
            # at one event (the bridge's task interval boundary, a pause of the machine)
            "slowest_due_at_s": [round(i / self.rate, 2) for i in slowest],
        }


async def ask(client: Client, payload: bytes, i: int, due: float, timeout: float, result: Requests) -> None:
    loop = asyncio.get_running_loop()
    sent = loop.time()
    result.max_lag_ms = max(result.max_lag_ms, (sent - due) * 1000)
    try:
        reply = await client.request(SUBJECT, payload, timeout=timeout)
    except nats.errors.TimeoutError:
        result.timeouts += 1
        return
    except nats.errors.Error as error:
        result.errors[type(error).__name__] += 1
        return
    took = (loop.time() - sent) * 1000
    status = (reply.headers or {}).get("Status")
    if status:
        result.statuses[status] += 1
    elif reply.data != b"re: " + payload:
        result.errors["wrong answer"] += 1
    else:
        result.round_trips[i] = took


async def request_runs(url: str, runs: list[tuple[str, int]], rate: float, timeout: float) -> list[Requests]:
    """Each run's requests in turn on one connection, request i of a run due at its start + i / rate."""
    client = await nats.connect(url)
    loop = asyncio.get_running_loop()
    results = []
    try:
        for name, count in runs:
            result = Requests(count, rate)
            tasks = []
            began = result.began = loop.time()
            for i in range(count):
                due = began + i / rate
                if (delay := due - loop.time()) > 0:
                    await asyncio.sleep(delay)
                payload = f"{name} {i}".encode()
                tasks.append(asyncio.create_task(ask(client, payload, i, due, timeout, result)))
            await asyncio.gather(*tasks)
            results.append(result)
    finally:
        await client.close()
    return results


def request_reply(
    name: str, nats_url: str, jms_url: str, args: argparse.Namespace, ready_at: float | None = None
) -> dict[str, Any]:
    count = max(int(args.rate * args.seconds), 1)
    runs = [(f"{name}-warmup", args.warmup_requests)] if args.warmup_requests > 0 else []
    runs.append((name, count))
    service = JmsService(jms_url, QUEUE)
    try:
        note(f"{name}: {args.warmup_requests} warm-up requests, then {count} at {args.rate:g}/s")
        results = asyncio.run(request_runs(nats_url, runs, args.rate, args.request_timeout))
        service.check()
    finally:
        service.close()
    if len(results) == 2 and not results[0].round_trips:
        raise RuntimeError(f"{name}: no warm-up request was answered: {results[0].figures()}")
    figures = results[-1].figures()
    figures["service_answered"] = service.answered
    if ready_at is not None:  # the bridge's first task interval began about then
        figures["started_s_after_subscribed"] = round(results[-1].began - ready_at, 1)
    if len(results) == 2:
        warmup = results[0].figures()
        figures["warmup"] = {k: warmup[k] for k in ("requests", "answered", "timeouts", "max_ms")}
    note(f"{name}: p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms, max {figures['max_ms']} ms")
    return figures


async def publish_all(url: str, run: str, count: int) -> tuple[float, float]:
    """`count` one-way messages as fast as nats-py sends them: when the first went, and how long it took."""
    client = await nats.connect(url)
    payload = b"x" * MESSAGE_BYTES
    try:
        began = time.monotonic()
        for i in range(count):
            await client.publish(SUBJECT, payload, headers={"jms.run": run, "jms.seq": str(i)})
        await client.flush()
        return began, time.monotonic() - began
    finally:
        await client.close()


def forward(
    name: str, nats_url: str, connection: Any, args: argparse.Namespace, check: Callable[[], None]
) -> dict[str, Any]:
    run, count = f"{name}-forward", args.messages
    drain = Drain(connection, QUEUE, run, count)
    try:
        note(f"{name}: forwarding {count} messages")
        began, publish_seconds = asyncio.run(publish_all(nats_url, run, count))
        deadline = time.monotonic() + args.forward_timeout
        while not drain.done.wait(0.1) and time.monotonic() < deadline:
            drain.check()
            check()
    finally:
        drain.close()
    window = drain.last_seen - began if drain.done.is_set() else None
    figures = {
        "messages": count,
        "received": len(drain.seen),
        "duplicates": drain.messages - len(drain.seen),
        "other_messages": drain.others,
        "complete": drain.done.is_set(),
        "seconds": round(window, 3) if window else None,
        "msg_s": round(count / window, 1) if window else None,
        "publish_msg_s": round(count / publish_seconds, 1) if publish_seconds > 0 else None,
    }
    note(f"{name}: forwarding {figures['msg_s']} msg/s ({figures['received']} of {count} received)")
    return figures


# --- the two paths -------------------------------------------------------------------------------------


def baseline(
    nats_server: NatsServer, activemq: ActiveMqBroker, drain_connection: Any, args: argparse.Namespace
) -> dict[str, Any]:
    loop = DirectLoop(nats_server.url, activemq.url, SUBJECT, QUEUE)
    try:
        figures = request_reply("baseline", nats_server.url, activemq.url, args)
        loop.check()
        figures["forwarding"] = forward("baseline", nats_server.url, drain_connection, args, loop.check)
        figures["loop"] = dict(loop.counts)
        return figures
    finally:
        loop.close()


def bridge_documents(
    nats_server: NatsServer, activemq: ActiveMqBroker, kafka: KafkaBroker, mode: str
) -> list[dict[str, Any]]:
    """The bridge (the tests' harness document, without its short trigger and task intervals: the
    benchmarks' one, bench/local_run.py) and its one natsToJms route."""
    spec = {"nats": {"servers": [nats_server.url]}, "spark": {"mode": mode}}
    bridge = bridge_document(BRIDGE, activemq, kafka, [{"queue": IDLE_QUEUE}], None, **spec)
    route = {
        "apiVersion": "jmsbridge.dev/v1alpha1",
        "kind": "JmsBridgeRoute",
        "metadata": {"name": "requests"},
        "spec": {
            "bridgeRef": {"name": BRIDGE},
            "direction": "natsToJms",
            "natsSubject": SUBJECT,
            "jmsDestination": {"queue": QUEUE},
        },
    }
    return [bridge, route]


def job_log_figures(log: Path) -> dict[str, Any]:
    """The job's `nats interval` lines summed, and its ERROR / WARN lines counted; the first few errors
    and warnings of the bridge's own loggers quoted."""
    intervals: Counter[str] = Counter()
    logged = 0
    levels: Counter[str] = Counter()
    quoted: list[str] = []
    for line in log.read_text(errors="replace").splitlines():
        if match := NATS_INTERVAL_LINE.search(line):
            logged += 1
            row = json.loads(match.group(1))
            intervals.update({k: int(v) for k, v in row.items() if isinstance(v, int)})
        elif level := LOG_LEVEL.search(line):
            levels[level.group(1)] += 1
            # Spark's start-up warnings are no news: quote errors, and the bridge's own warnings
            if len(quoted) < 5 and (level.group(1) == "ERROR" or "jmsbridge" in line):
                quoted.append(line[:300])
    return {
        "nats_intervals_logged": logged,
        "nats_counts": dict(intervals),
        "log_levels": dict(levels),
        "log_lines": quoted,
    }


def bridge(
    nats_server: NatsServer,
    activemq: ActiveMqBroker,
    kafka: KafkaBroker,
    work: Path,
    drain_connection: Any,
    args: argparse.Namespace,
) -> dict[str, Any]:
    files = [work / "bridge.yaml"]
    documents = bridge_documents(nats_server, activemq, kafka, args.mode)
    files[0].write_text(yaml.safe_dump_all(documents, sort_keys=False))
    job = BridgeJob(files, work).start()
    try:
        began = time.monotonic()
        job.wait_log("subscribed to NATS subject", timeout=300)
        subscribed = time.monotonic()
        note(f"bridge: subscribed after {subscribed - began:.0f}s")
        process = job.process
        assert process is not None

        def check() -> None:
            if process.poll() is not None:
                raise RuntimeError(f"the bridge job exited with {process.returncode}:\n{job.log()[-3000:]}")

        figures = request_reply("bridge", nats_server.url, activemq.url, args, subscribed)
        check()
        figures["forwarding"] = forward("bridge", nats_server.url, drain_connection, args, check)
        figures["job"] = job_log_figures(job.logs[-1])
        return figures
    finally:
        job.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rate", type=float, default=100.0, help="requests per second")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long requests are sent")
    parser.add_argument("--warmup-requests", type=int, default=100, help="sent first, not counted; 0: none")
    parser.add_argument("--request-timeout", type=float, default=10.0, help="seconds each request waits")
    parser.add_argument("--messages", type=int, default=20_000, help="one-way messages forwarded per path")
    parser.add_argument("--forward-timeout", type=float, default=120.0, help="seconds for them to arrive")
    parser.add_argument("--mode", choices=["realTime", "microBatch"], default="realTime", help="spark.mode")
    args = parser.parse_args()

    stdout, sys.stdout = sys.stdout, sys.stderr  # stdout carries the one JSON line only
    began = time.monotonic()
    load = os.getloadavg()[0]
    with local_brokers() as (nats_server, activemq, kafka, work):
        drain_connection = connect(activemq.url)
        try:
            direct = baseline(nats_server, activemq, drain_connection, args)
            bridged = bridge(nats_server, activemq, kafka, work, drain_connection, args)
        finally:
            drain_connection.close()
    forwarding_ratio = ratio(bridged["forwarding"]["msg_s"], direct["forwarding"]["msg_s"])
    p50, p99 = bridged["p50_ms"], bridged["p99_ms"]
    result = {
        "benchmark": "nats_request_reply",
        "rate_per_s": args.rate,
        "seconds": args.seconds,
        "mode": args.mode,
        "task_interval_seconds": TASK_INTERVAL_SECONDS,
        "warmup_requests": args.warmup_requests,
        "request_timeout_s": args.request_timeout,
        "messages": args.messages,
        "message_bytes": MESSAGE_BYTES,
        "baseline_jms_sends": f"transacted batches of up to {BATCH_MESSAGES}",
        "cpu_count": os.cpu_count(),
        "load_avg_1m_at_start": round(load, 2),
        "bridge_ms": {k: bridged[k] for k in ("p50_ms", "p99_ms", "max_ms")},
        "baseline_ms": {k: direct[k] for k in ("p50_ms", "p99_ms", "max_ms")},
        # no answer within --request-timeout, plus the bridge's 408 statuses (its route's timeoutSeconds)
        "timeouts": {
            "bridge": bridged["timeouts"] + bridged["timeout_statuses"],
            "baseline": direct["timeouts"] + direct["timeout_statuses"],
        },
        "p50_ratio": ratio(p50, direct["p50_ms"]),
        "p99_ratio": ratio(p99, direct["p99_ms"]),
        "forwarding_msg_s": {
            "bridge": bridged["forwarding"]["msg_s"],
            "baseline": direct["forwarding"]["msg_s"],
        },
        "forwarding_ratio": forwarding_ratio,
        "goals": {
            **GOALS,
            "met": {
                "p50": p50 is not None and p50 <= GOALS["p50_ms_at_most"],
                "p99": p99 is not None and p99 <= GOALS["p99_ms_at_most"],
                "forwarding": forwarding_ratio is not None
                and forwarding_ratio >= GOALS["forwarding_ratio_at_least"],
            },
        },
        "bridge": bridged,
        "baseline": direct,
        "elapsed_s": round(time.monotonic() - began, 1),
    }
    print(json.dumps(result), file=stdout, flush=True)


if __name__ == "__main__":
    main()
