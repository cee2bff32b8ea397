"""Request/reply benchmark: a JMS requester answered by a Kafka service through the bridge, against a JMS
responder on the same broker; and Kafka requesters answered by JMS services of both correlation
conventions through the bridge, the message-id one against the correlation-id one; in the same run.

    python bench/request_reply.py [--rate 20] [--seconds 30] [--warmup-requests 20] [--trigger-ms MS]
                                  [--task-interval-seconds S] [--reply-timeout 60] [--directions jms,kafka]

Run from the repository root after scripts/setup.sh (needs Debian's ActiveMQ, Apache Kafka's jars, pyspark).
Prints exactly one JSON line on stdout; progress goes to stderr. Takes three to five minutes.

The brokers are started here: ActiveMQ Classic with its persistent store, and Apache Kafka (one KRaft node).
The requester, in this process, uses the raw javax.jms API through JPype (bench/raw_jms.py) as a JMS
application would: one connection, a `TemporaryQueue` for replies with a consumer on it, and for each
request a TextMessage with `JMSReplyTo` (the temporary queue) and a `JMSCorrelationID` of its own, sent
(persistent, the JMS default) at a steady `--rate` for `--seconds`. A thread receives the replies and
stamps each as `receive()` hands it over; round trip = that time - the time just before `send()`.

- direct: a JMS responder thread (its own connection) consumes the request queue and answers each
  request on its `JMSReplyTo` with the same `JMSCorrelationID`;
- bridge: `jmsbridge job` (jmsbridge.local.BridgeJob) with two routes: `requests` (jmsToKafka, the
  request queue -> topic `rr-requests`, format native, so the record carries `jms.JMSReplyTo` and
  `jms.JMSCorrelationID`) and `replies` (kafkaToJms, topic `rr-replies` -> `jmsDestination: {fromHeader:
  jms.JMSReplyTo}`); the service, a thread of this process, is a confluent-kafka consumer of
  `rr-requests` (bench/topic_watch.py, which does not spin on a caught-up topic) and a producer that
  answers each record on `rr-replies` with those two headers copied. The bridge runs with its defaults
  (500 ms trigger, 100 ms JMS ingest batch delay) unless `--trigger-ms` says otherwise: a request waits
  for two micro-batches, one per direction.

For each path, `--warmup-requests` go first at the same rate and are not counted (the bridge's first
micro-batches start PySpark's workers). A request without a reply within `--reply-timeout` seconds of
the last send counts as lost. Figures: p50, p99, max and mean of the round trips in ms, for both paths,
and the bridge's over the direct one's; the p50 of the first and of the second half of the requests (in
the order sent: a path still warming up shows in the first); for the bridge, how many micro-batches
each query ran meanwhile and their median and longest duration (the job's `batch` and `ingress batch`
lines), which with the trigger interval account for most of a round trip.

The Kafka-requester direction (`kafka_requester` in the JSON line) is bench/kafka_requests.py: its
figures per convention, and `message_id_p50_over_correlation_id`, what keeping the requests pending in
Kafka costs the round trip.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Message, Producer

from bench.kafka_requests import JmsService, kafka_requesters
from bench.local_run import (
    TASK_INTERVAL_SECONDS,
    batch_lines,
    bridge_document,
    bridge_spec,
    local_brokers,
    median,
    quantile,
    ratio,
)
from bench.pacing import paced
from bench.raw_jms import AUTO_ACKNOWLEDGE, connect
from bench.topic_watch import TopicWatch
from bridge_job.config import SparkSpec
from jmsbridge.kafka_server import KafkaBroker
from jmsbridge.local import ActiveMqBroker, BridgeJob
from testbed.harness import route_document, to_jms_route, write_yaml

RECEIVE_MS = 100
DEFAULT_TRIGGER_MS = SparkSpec.model_fields["trigger_interval_ms"].default
REQUEST_TOPIC, REPLY_TOPIC = "rr-requests", "rr-replies"
REPLY_HEADERS = ("jms.JMSReplyTo", "jms.JMSCorrelationID")


def note(text: str) -> None:
    print(f"[request_reply {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


class Stopped(Exception):
    """A responder or service was asked to stop."""


class Requester:
    """A JMS requester: sends on one queue, receives the replies on its own temporary queue."""

    def __init__(self, url: str, queue: str) -> None:
        self.connection = connect(url)
        self.send_session = self.connection.createSession(False, AUTO_ACKNOWLEDGE)
        self.producer = self.send_session.createProducer(self.send_session.createQueue(queue))
        receive_session = self.connection.createSession(False, AUTO_ACKNOWLEDGE)
        self.reply_to = receive_session.createTemporaryQueue()
        self.consumer = receive_session.createConsumer(self.reply_to)
        self.sent: dict[str, float] = {}  # correlation id -> time.time() before send
        self.replied: dict[str, float] = {}  # correlation id -> time.time() at receipt
        self.duplicates = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._receiver = threading.Thread(target=self._receive, name="replies", daemon=True)
        self._receiver.start()

    def _receive(self) -> None:
        while not self._stop.is_set():
            m = self.consumer.receive(RECEIVE_MS)
            if m is None:
                continue
            seen = time.time()
            correlation_id = str(m.getJMSCorrelationID())
            with self._lock:
                if correlation_id in self.replied:
                    self.duplicates += 1
                else:
                    self.replied[correlation_id] = seen

    def run(
        self, name: str, count: int, rate: float, reply_timeout: float, check: Callable[[], None]
    ) -> None:
        """Send `count` requests at `rate` per second, then wait for their replies (or the timeout)."""
        for i in paced(count, rate):
            message = self.send_session.createTextMessage(f"request {name} {i}")
            correlation_id = f"{name}:{i}"
            message.setJMSReplyTo(self.reply_to)
            message.setJMSCorrelationID(correlation_id)
            self.sent[correlation_id] = time.time()
            self.producer.send(message)
        deadline = time.monotonic() + reply_timeout
        while time.monotonic() < deadline and len(self.answered(name)) < count:
            check()
            time.sleep(0.05)

    def answered(self, name: str) -> dict[str, float]:
        """Round trips in ms of the requests of run `name` that have a reply."""
        prefix = f"{name}:"
        with self._lock:
            return {c: (t - self.sent[c]) * 1000 for c, t in self.replied.items() if c.startswith(prefix)}

    def close(self) -> None:
        self._stop.set()
        self._receiver.join()
        self.connection.close()


class KafkaService:
    """The bridge path's Kafka service: answers each request record on the reply topic, copying the
    headers that address the reply (JMSReplyTo) and identify it (JMSCorrelationID)."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        self.producer.list_topics(REPLY_TOPIC, timeout=30)
        self.watch = TopicWatch(bootstrap, REQUEST_TOPIC)  # from the high watermark: before any request
        self.answered = 0
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="kafka-service", daemon=True)
        self._thread.start()

    def _answer(self, records: list[Message], seen: float) -> bool:
        for record in records:
            received = cast(list[tuple[str, str | bytes | None]], record.headers() or [])  # as written
            headers = [(k, v) for k, v in received if k in REPLY_HEADERS]
            self.producer.produce(
                REPLY_TOPIC, b"reply to " + (record.value() or b""), record.key(), headers=headers
            )
        self.producer.flush(30)
        self.answered += len(records)
        return False

    def _check(self) -> None:
        if self._stop.is_set():
            raise Stopped

    def _serve(self) -> None:
        try:
            self.watch.run(self._answer, 24 * 3600.0, self._check)
        except Stopped:
            pass
        except BaseException as error:  # reported by check() in the main thread
            self.failure = error
        finally:
            self.watch.close()

    def check(self) -> None:
        if self.failure is not None:
            raise RuntimeError(f"the Kafka service failed: {self.failure!r}")

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.producer.flush(30)


def figures(requester: Requester, name: str, count: int) -> dict[str, Any]:
    answered = requester.answered(name)
    round_trips = list(answered.values())
    # In the order sent: a path that is still warming up shows it in the first half.
    in_order = [ms for _, ms in sorted(answered.items(), key=lambda item: int(item[0].rpartition(":")[2]))]
    half = len(in_order) // 2
    result = {
        "requests": count,
        "replies": len(round_trips),
        "lost": count - len(round_trips),
        "p50_ms": quantile(round_trips, 50),
        "p99_ms": quantile(round_trips, 99),
        "max_ms": round(max(round_trips), 1) if round_trips else None,
        "mean_ms": round(statistics.fmean(round_trips), 1) if round_trips else None,
        "p50_first_half_ms": quantile(in_order[:half], 50),
        "p50_second_half_ms": quantile(in_order[half:], 50),
    }
    note(f"{name}: p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, lost {result['lost']}")
    return result


def durations(batches: list[dict[str, Any]]) -> dict[str, Any]:
    """How many micro-batches of one query ran while the requests were measured, and how long they took."""
    seconds = [
        float(b["duration_seconds"]) for b in batches if isinstance(b.get("duration_seconds"), int | float)
    ]
    return {
        "count": len(batches),
        "median_duration_s": median(seconds),
        "max_duration_s": max(seconds, default=None),
    }


def logged_batches(log: Path, start: int, requests: int, timeout: float = 15.0) -> list[dict[str, Any]]:
    """The job's batch lines from `start` on, once both queries' account for `requests` records (the
    driver logs a batch up to a second after its records are through), or after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        batches = batch_lines(log, start)
        egress = sum(int(b.get("input_records", 0)) for b in batches if "sent" not in b)
        ingress = sum(int(b.get("records", 0)) for b in batches if "sent" in b)
        if min(egress, ingress) >= requests or time.monotonic() > deadline:
            return batches
        time.sleep(0.2)


def warm_up(requester: Requester, name: str, args: argparse.Namespace, check: Callable[[], None]) -> None:
    if args.warmup_requests > 0:
        note(f"{name}: {args.warmup_requests} warm-up requests")
        requester.run(f"{name}-warmup", args.warmup_requests, args.rate, max(args.reply_timeout, 120), check)
        if requester.answered(f"{name}-warmup") == {}:
            raise RuntimeError(f"{name}: no warm-up request was answered")


def measure(
    requester: Requester, name: str, args: argparse.Namespace, check: Callable[[], None]
) -> dict[str, Any]:
    """The measured requests (after the warm-up); their figures."""
    count = max(int(args.rate * args.seconds), 1)
    note(f"{name}: {count} requests at {args.rate:g}/s")
    requester.run(name, count, args.rate, args.reply_timeout, check)
    return figures(requester, name, count)


def direct(activemq: ActiveMqBroker, args: argparse.Namespace) -> dict[str, Any]:
    queue = "rr.direct"
    responder = JmsService(activemq.url, queue, "correlationId")
    requester = Requester(activemq.url, queue)
    try:
        warm_up(requester, "direct", args, lambda: None)
        return measure(requester, "direct", args, lambda: None)
    finally:
        requester.close()
        responder.close()


def bridge(
    activemq: ActiveMqBroker, kafka: KafkaBroker, work: Path, args: argparse.Namespace
) -> dict[str, Any]:
    queue = "rr.requests"
    kafka.create_topics(REQUEST_TOPIC, REPLY_TOPIC)
    spec = bridge_spec(args)
    document = bridge_document("rr", activemq, kafka, [{"queue": queue}], args.trigger_ms, **spec)
    routes = [
        route_document("requests", "rr", REQUEST_TOPIC, match={"address": queue}),
        to_jms_route(
            "replies", "rr", REPLY_TOPIC, {"fromHeader": "jms.JMSReplyTo", "allowed": "queue://ID:.*"}
        ),
    ]
    files = [write_yaml(work / "bridge.yaml", document), write_yaml(work / "routes.yaml", *routes)]
    job = BridgeJob(files, work).start()
    service = KafkaService(kafka.bootstrap)
    requester: Requester | None = None
    try:
        job.wait_running(timeout=300)
        note("bridge: running")
        process = job.process
        assert process is not None

        def check() -> None:
            service.check()
            if process.poll() is not None:
                raise RuntimeError(f"the bridge job exited with {process.returncode}:\n{job.log()[-3000:]}")

        requester = Requester(activemq.url, queue)
        warm_up(requester, "bridge", args, check)
        log = job.logs[-1]
        start = log.stat().st_size
        result = measure(requester, "bridge", args, check)
        batches = logged_batches(log, start, result["requests"])
        result["service_answered"] = service.answered
        result["egress_batches"] = durations([b for b in batches if "sent" not in b])
        result["ingress_batches"] = durations([b for b in batches if "sent" in b])
        return result
    finally:
        if requester is not None:
            requester.close()
        service.close()
        job.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rate", type=float, default=20.0, help="requests per second")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long requests are sent")
    parser.add_argument("--warmup-requests", type=int, default=20, help="sent first, not counted; 0: none")
    parser.add_argument(
        "--trigger-ms", type=int, default=None, help=f"default: the bridge's ({DEFAULT_TRIGGER_MS})"
    )
    parser.add_argument("--mode", choices=["realTime", "microBatch"], default="realTime", help="spark.mode")
    parser.add_argument(
        "--task-interval-seconds",
        type=int,
        default=None,
        help=f"realTime: spark.taskIntervalSeconds; default: the bridge's ({TASK_INTERVAL_SECONDS})",
    )
    parser.add_argument(
        "--ingest-delay-ms", type=int, default=None, help="jms.ingest.maxBatchDelayMs; default: the bridge's"
    )
    parser.add_argument("--reply-timeout", type=float, default=60.0, help="seconds after the last request")
    parser.add_argument(
        "--directions", default="jms,kafka", help="jms: JMS requesters; kafka: Kafka requesters; default both"
    )
    args = parser.parse_args()
    directions = set(args.directions.split(","))

    stdout, sys.stdout = sys.stdout, sys.stderr  # stdout carries the one JSON line only
    began = time.monotonic()
    direct_figures: dict[str, Any] = {"p50_ms": None, "p99_ms": None}
    bridge_figures: dict[str, Any] = {"p50_ms": None, "p99_ms": None}
    kafka_figures: dict[str, Any] | None = None
    with local_brokers(note) as (activemq, kafka, work):
        if "jms" in directions:
            direct_figures = direct(activemq, args)
            bridge_figures = bridge(activemq, kafka, work, args)
        if "kafka" in directions:
            kafka_figures = kafka_requesters(activemq, kafka, work / "kafka-requesters", args, note)
    result = {
        "benchmark": "request_reply",
        "rate_per_s": args.rate,
        "seconds": args.seconds,
        "warmup_requests": args.warmup_requests,
        "mode": args.mode,
        "ingest_delay_ms": args.ingest_delay_ms,
        "task_interval_seconds": args.task_interval_seconds or TASK_INTERVAL_SECONDS,
        "trigger_ms": args.trigger_ms if args.trigger_ms is not None else DEFAULT_TRIGGER_MS,
        "cpu_count": os.cpu_count(),
        "direct": direct_figures,
        "bridge": bridge_figures,
        "p50_ratio": ratio(bridge_figures["p50_ms"], direct_figures["p50_ms"]),
        "p99_ratio": ratio(bridge_figures["p99_ms"], direct_figures["p99_ms"]),
        "bridge_p50_within_1s": bridge_figures["p50_ms"] is not None and bridge_figures["p50_ms"] <= 1000,
        "kafka_requester": kafka_figures,
        "elapsed_s": round(time.monotonic() - began, 1),
    }
    print(json.dumps(result), file=stdout, flush=True)


if __name__ == "__main__":
    main()
