"""The Kafka-requester direction of bench/request_reply.py: Kafka requesters calling JMS services of both
correlation conventions through one bridge job, at the same time, so that the two compare in one run.

One bridge, two request routes: topic `rr-kreq-corr` -> queue `rr.svc.corr` with `reply.correlation:
correlationId` (nothing remembered between request and answer), and `rr-kreq-msgid` -> queue
`rr.svc.msgid` with `messageId` (each request kept pending in `<bridgeId>.jms-bridge.pending` until its
answer: one more Kafka write before the JMS commit, a lookup and a tombstone on the way back). Two JMS
responders (threads of this process, raw javax.jms) answer on JMSReplyTo, one copying the request's
JMSCorrelationID, one setting its JMSMessageID. A requester sends one request to each topic per tick at
`--rate` per convention, correlation id `<name>:<i>` in `jms.JMSCorrelationID`; a `TopicWatch` per reply
topic stamps each answer by its key (the requester's correlation id). Round trip = that time - the time
just before `produce()`.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Message, Producer

from bench.local_run import bridge_document, bridge_spec, quantile, ratio
from bench.pacing import paced
from bench.raw_jms import AUTO_ACKNOWLEDGE, connect
from bench.topic_watch import TopicWatch
from jmsbridge.kafka_server import KafkaBroker
from jmsbridge.local import ActiveMqBroker, BridgeJob
from testbed.harness import to_jms_route, write_yaml

RECEIVE_MS = 100
CONVENTIONS = ("correlationId", "messageId")
TOPICS = {"correlationId": "corr", "messageId": "msgid"}
REPLY_QUEUE = "rr.replies"

Note = Callable[[str], None]


class JmsService:
    """Answers each request on its JMSReplyTo, marked by the request's correlation or message id."""

    def __init__(self, url: str, queue: str, convention: str) -> None:
        self.by_message_id = convention == "messageId"
        self.connection = connect(url)
        self.session = self.connection.createSession(False, AUTO_ACKNOWLEDGE)
        self.consumer = self.session.createConsumer(self.session.createQueue(queue))
        self.producer = self.session.createProducer(None)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=f"service-{queue}", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            m = self.consumer.receive(RECEIVE_MS)
            if m is None:
                continue
            reply = self.session.createTextMessage(f"reply to {m.getText()}")
            reply.setJMSCorrelationID(m.getJMSMessageID() if self.by_message_id else m.getJMSCorrelationID())
            self.producer.send(m.getJMSReplyTo(), reply)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.connection.close()


class Answers:
    """The answers on one reply topic, stamped by key as they are seen."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.watch = TopicWatch(bootstrap, topic)  # from the high watermark: before any request
        self.seen: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name=f"answers-{topic}", daemon=True)
        self._thread.start()

    def _on_records(self, records: list[Message], seen: float) -> bool:
        for record in records:
            key = (record.key() or b"").decode()
            self.seen.setdefault(key, seen)
        return self._stop.is_set()

    def _read(self) -> None:
        while not self._stop.is_set():
            self.watch.run(self._on_records, 1.0)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.watch.close()


def request_all(
    producer: Producer, name: str, count: int, rate: float, sent: dict[str, dict[str, float]]
) -> None:
    """`count` requests per convention at `rate` per second each, alternating."""
    for i in paced(count, rate):
        for convention in CONVENTIONS:
            correlation_id = f"{name}:{i}"
            headers: Any = [
                ("jmsbridge.replyTopic", f"rr-krep-{TOPICS[convention]}".encode()),
                ("jms.JMSCorrelationID", correlation_id.encode()),
            ]
            sent[convention][correlation_id] = time.time()
            producer.produce(
                f"rr-kreq-{TOPICS[convention]}", f"request {correlation_id}".encode(), headers=headers
            )
            producer.poll(0)
    producer.flush(30)


def wait_answers(
    answers: dict[str, Answers], name: str, count: int, timeout: float, check: Callable[[], None]
) -> None:
    deadline = time.monotonic() + timeout
    prefix = f"{name}:"
    while time.monotonic() < deadline:
        check()
        if all(sum(k.startswith(prefix) for k in list(a.seen)) >= count for a in answers.values()):
            return
        time.sleep(0.05)


def figures(sent: dict[str, float], seen: dict[str, float], name: str, count: int) -> dict[str, Any]:
    prefix = f"{name}:"
    round_trips = [(seen[c] - t) * 1000 for c, t in sent.items() if c.startswith(prefix) and c in seen]
    return {
        "requests": count,
        "replies": len(round_trips),
        "lost": count - len(round_trips),
        "p50_ms": quantile(round_trips, 50),
        "p99_ms": quantile(round_trips, 99),
        "mean_ms": round(statistics.fmean(round_trips), 1) if round_trips else None,
    }


def kafka_requesters(
    activemq: ActiveMqBroker, kafka: KafkaBroker, work: Path, args: argparse.Namespace, note: Note
) -> dict[str, Any]:
    """Both conventions through one bridge job; their figures and the message-id path's p50 over the
    correlation-id path's."""
    work.mkdir(parents=True, exist_ok=True)
    for short in TOPICS.values():
        kafka.create_topics(f"rr-kreq-{short}", f"rr-krep-{short}")
    spec = bridge_spec(args)
    spec["jms"] = spec.get("jms", {}) | {"replyQueue": REPLY_QUEUE}
    document = bridge_document("rrk", activemq, kafka, [{"queue": REPLY_QUEUE}], args.trigger_ms, **spec)
    routes = [
        to_jms_route(
            f"requests-{short}",
            "rrk",
            f"rr-kreq-{short}",
            {"queue": f"rr.svc.{short}"},
            reply={"topics": [f"rr-krep-{short}"], "correlation": convention},
            order=order,
        )
        for order, (convention, short) in enumerate(TOPICS.items())
    ]
    files = [write_yaml(work / "bridge.yaml", document), write_yaml(work / "routes.yaml", *routes)]
    job = BridgeJob(files, work).start()
    services = [JmsService(activemq.url, f"rr.svc.{s}", c) for c, s in TOPICS.items()]
    answers: dict[str, Answers] = {}
    try:
        job.wait_running(timeout=300)
        note("kafka requesters: bridge running")
        process = job.process
        assert process is not None

        def check() -> None:
            if process.poll() is not None:
                raise RuntimeError(f"the bridge job exited with {process.returncode}:\n{job.log()[-3000:]}")

        answers = {c: Answers(kafka.bootstrap, f"rr-krep-{s}") for c, s in TOPICS.items()}
        producer = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 0})
        sent: dict[str, dict[str, float]] = {c: {} for c in CONVENTIONS}
        if args.warmup_requests > 0:
            note(f"kafka requesters: {args.warmup_requests} warm-up requests per convention")
            request_all(producer, "warmup", args.warmup_requests, args.rate, sent)
            wait_answers(answers, "warmup", args.warmup_requests, max(args.reply_timeout, 120), check)
        count = max(int(args.rate * args.seconds), 1)
        note(f"kafka requesters: {count} requests per convention at {args.rate:g}/s each")
        request_all(producer, "run", count, args.rate, sent)
        wait_answers(answers, "run", count, args.reply_timeout, check)
        result: dict[str, Any] = {c: figures(sent[c], answers[c].seen, "run", count) for c in CONVENTIONS}
        for convention in CONVENTIONS:
            note(f"kafka requesters, {convention}: p50 {result[convention]['p50_ms']} ms")
        result["message_id_p50_over_correlation_id"] = ratio(
            result["messageId"]["p50_ms"], result["correlationId"]["p50_ms"]
        )
        return result
    finally:
        for watcher in answers.values():
            watcher.close()
        for service in services:
            service.close()
        job.stop()
