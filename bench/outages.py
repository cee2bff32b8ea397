"""Outage soak benchmark: the bridge job while Kafka flaps, either way, nothing lost, no stop.

    python bench/outages.py [--direction egress|ingress] [--minutes 10] [--period 60] [--down 20]
                            [--how freeze|stop] [--rate 100] [--warmup 30]
                            [--delivery atLeastOnce|exactlyOnce] [--timeout 600]

Run from the repository root after scripts/setup.sh (needs Debian's ActiveMQ, Apache Kafka's jars, pyspark).
Prints exactly one JSON line on stdout; progress goes to stderr. Takes `--minutes` plus about two.

ActiveMQ Classic (persistent) and Apache Kafka are started here, and one bridge (`jmsbridge job`, local
Spark, the default patience of 300 s) moves a queue to a topic (`--direction egress`, JMS -> Kafka: a
sender thread sends persistent 256-byte messages numbered by a `seq` property, and a consumer of the topic
(read_committed) notes when each record arrives) or a topic to a queue (`--direction ingress`, a
kafkaToJms route: an idempotent producer thread produces 256-byte records numbered by a `jms.seq` header,
and a JMS consumer of the queue notes when each message arrives). The load runs at `--rate` per second for
`--warmup` seconds and then `--minutes`. A message counts as sent once its broker acknowledged it (ActiveMQ
the persistent send, Kafka the record: librdkafka holds records through an outage and sends them after).
Every `--period` seconds after the warm-up, starting one period in, Kafka goes away for `--down` seconds:
frozen (`--how freeze`, SIGSTOP: connections accepted and never answered, what a partition looks like) or
stopped (`--how stop`: refused). Then the load stops and the other end is read until every sent message is
there or `--timeout` passes.

Figures:
- `lost` (sent and acknowledged, never at the other end), `duplicates` (records beyond one per
  message), `job_stops` (`jmsbridge stopped:` lines; the job must not stop at all), `outages`;
- `latency_p50_ms` / `latency_p99_ms` of the messages sent in the `--period` / 2 seconds before the
  first outage (after the warm-up and the job's first, slower batches): the baseline this run compares
  against; `recovery_s` per outage: from the end of the outage until the first message sent after it
  arrives with a latency at or below that baseline p99 (the backlog is drained and records flow at their
  normal pace again), and its maximum.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.local_run import local_brokers, notes, quantile
from bench.raw_jms import DUPS_OK_ACKNOWLEDGE, connect
from bridge_job.message import Destination, DestinationKind, JmsMessage, Property
from jmsbridge.kafka_server import KafkaBroker
from jmsbridge.local import ActiveMqBroker, BridgeJob, jms_connection
from testbed.harness import bridge_document, route_document, to_jms_route, write_yaml

note = notes("outages")


class Load(threading.Thread):
    """Sends numbered messages at a fixed rate; `sent[seq]` is the wall time of each acknowledged send."""

    def __init__(self, activemq: ActiveMqBroker, queue: str, rate: float, seconds: float) -> None:
        super().__init__(name="load", daemon=True)
        self.activemq, self.queue, self.rate, self.seconds = activemq, queue, rate, seconds
        self.sent: dict[int, float] = {}

    def run(self) -> None:
        destination = Destination(DestinationKind.QUEUE, self.queue)
        with jms_connection(self.activemq) as connection, connection.producer() as producer:
            began = time.monotonic()
            seq = 0
            while time.monotonic() - began < self.seconds:
                due = began + seq / self.rate
                time.sleep(max(0.0, due - time.monotonic()))
                message = JmsMessage(
                    destination, body=f"{seq:08d}".ljust(256, "."), properties={"seq": Property.of(seq)}
                )
                producer.send(message)
                self.sent[seq] = time.time()
                seq += 1


class KafkaLoad(threading.Thread):
    """Produces numbered records at a fixed rate; `sent[seq]` is when each record Kafka acknowledged was
    produced (librdkafka keeps records through an outage, up to its 300 s `message.timeout.ms`)."""

    def __init__(self, kafka: KafkaBroker, topic: str, rate: float, seconds: float) -> None:
        super().__init__(name="load", daemon=True)
        self.topic, self.rate, self.seconds = topic, rate, seconds
        self.producer = Producer({"bootstrap.servers": kafka.bootstrap, "enable.idempotence": True})
        self.sent: dict[int, float] = {}

    def run(self) -> None:
        produced: dict[int, float] = {}

        def delivered(error: KafkaError | None, message: Message) -> None:
            seq = int(str(message.key() or b"", "ascii"))
            if error is None:
                self.sent[seq] = produced[seq]

        began = time.monotonic()
        seq = 0
        while time.monotonic() - began < self.seconds:
            time.sleep(max(0.0, began + seq / self.rate - time.monotonic()))
            produced[seq] = time.time()
            headers: list[tuple[str, str | bytes | None]] = [("jms.seq", str(seq).encode())]
            while True:
                try:
                    self.producer.produce(
                        self.topic,
                        f"{seq:08d}".ljust(256, "."),
                        str(seq),
                        on_delivery=delivered,
                        headers=headers,
                    )
                    break
                except BufferError:
                    self.producer.poll(0.1)
            self.producer.poll(0)
            seq += 1
        self.producer.flush(600)


class QueueWatch(threading.Thread):
    """Receives the queue's messages; `arrived[seq]` is when each message was first seen."""

    def __init__(self, activemq: ActiveMqBroker, queue: str) -> None:
        super().__init__(name="watch", daemon=True)
        self.arrived: dict[int, float] = {}
        self.records = 0
        self.stopping = threading.Event()
        self.connection = connect(activemq.url)
        session = self.connection.createSession(False, DUPS_OK_ACKNOWLEDGE)
        self.consumer = session.createConsumer(session.createQueue(queue))

    def run(self) -> None:
        while not self.stopping.is_set():
            message = self.consumer.receive(200)
            if message is not None:
                self.records += 1
                self.arrived.setdefault(int(str(message.getStringProperty("seq"))), time.time())
        self.connection.close()


class Watch(threading.Thread):
    """Reads the topic; `arrived[seq]` is when each message's first record was seen."""

    def __init__(self, kafka: KafkaBroker, topic: str) -> None:
        super().__init__(name="watch", daemon=True)
        self.arrived: dict[int, float] = {}
        self.records = 0
        self.stopping = threading.Event()
        self.consumer = Consumer(
            {
                "bootstrap.servers": kafka.bootstrap,
                "group.id": f"bench-{uuid.uuid4().hex}",
                "enable.auto.commit": "false",
                "isolation.level": "read_committed",
            }
        )
        self.consumer.assign([TopicPartition(topic, 0, 0)])

    def run(self) -> None:
        while not self.stopping.is_set():
            for message in self.consumer.consume(500, timeout=0.2):
                if message.error() is not None:
                    continue
                value = dict(message.headers() or []).get("jms.seq")
                if isinstance(value, bytes):
                    self.records += 1
                    self.arrived.setdefault(int(value), time.time())
        self.consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--direction", choices=["egress", "ingress"], default="egress")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--period", type=float, default=60.0)
    parser.add_argument("--down", type=float, default=20.0)
    parser.add_argument("--how", choices=["freeze", "stop"], default="freeze")
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--warmup", type=float, default=30.0)
    parser.add_argument("--delivery", choices=["atLeastOnce", "exactlyOnce"], default="atLeastOnce")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    with local_brokers(note) as (activemq, kafka, work):
        print(json.dumps(soak(args, activemq, kafka, work)), flush=True)


def soak(
    args: argparse.Namespace, activemq: ActiveMqBroker, kafka: KafkaBroker, work: Path
) -> dict[str, Any]:
    bridge_id = f"soak-{uuid.uuid4().hex[:6]}"
    queue, topic = f"{bridge_id}.in", f"{bridge_id}.out"
    kafka.create_topics(topic)
    bridge = bridge_document(bridge_id, activemq, kafka, [{"queue": queue}], delivery=args.delivery)
    egress = args.direction == "egress"
    # ingress: the topic to a queue of its own (the bridge's JMS source stays idle)
    route = (
        route_document("all", bridge_id, topic)
        if egress
        else to_jms_route(
            "all", bridge_id, topic, {"queue": f"{bridge_id}.back"}, send={"deliveryMode": "persistent"}
        )
    )
    files = [write_yaml(work / "bridge.yaml", bridge), write_yaml(work / "routes.yaml", route)]
    job = BridgeJob(files, work).start()
    try:
        job.wait_running(180)
        seconds = args.warmup + args.minutes * 60
        watch: Watch | QueueWatch = (
            Watch(kafka, topic) if egress else QueueWatch(activemq, f"{bridge_id}.back")
        )
        watch.start()
        load: Load | KafkaLoad = (
            Load(activemq, queue, args.rate, seconds)
            if egress
            else KafkaLoad(kafka, topic, args.rate, seconds)
        )
        load.start()
        note(f"{args.rate}/s for {args.minutes} min; Kafka {args.how} {args.down} s every {args.period} s")
        outages: list[tuple[float, float]] = []
        began = time.time() + args.warmup
        while time.time() - began + args.period < args.minutes * 60:
            time.sleep(max(0.0, began + (len(outages) + 1) * args.period - time.time()))
            cut = time.time()
            cut_off, restore = (
                (kafka.freeze, kafka.thaw) if args.how == "freeze" else (kafka.stop, kafka.start)
            )
            cut_off()
            time.sleep(args.down)
            restore()
            outages.append((cut, time.time()))
            note(f"outage {len(outages)}: {len(watch.arrived)} of {len(load.sent)} arrived so far")
        load.join()
        deadline = time.monotonic() + args.timeout
        while set(load.sent) - set(watch.arrived) and time.monotonic() < deadline:
            time.sleep(1.0)
        time.sleep(3.0)  # late duplicates
        watch.stopping.set()
        watch.join()
    finally:
        job.stop()
    return figures(args, load.sent, watch, began, outages, job.log())


def figures(
    args: argparse.Namespace,
    sent: dict[int, float],
    watch: Watch | QueueWatch,
    warm: float,
    outages: list[tuple[float, float]],
    log: str,
) -> dict[str, Any]:
    first_cut = outages[0][0] if outages else time.time()
    since = max(warm, first_cut - args.period / 2)
    steady = [(s, t) for s, t in sent.items() if since <= t < first_cut and s in watch.arrived]
    before = [1000 * (watch.arrived[s] - t) for s, t in steady]
    p99 = quantile(before, 99)  # ms
    recovery = []
    for _, back in outages:
        after = sorted((t, s) for s, t in sent.items() if t >= back and s in watch.arrived)
        normal = next((t for t, s in after if p99 is not None and 1000 * (watch.arrived[s] - t) <= p99), None)
        recovery.append(round(normal - back, 2) if normal is not None else None)
    return {
        "bench": "outages",
        "direction": args.direction,
        "how": args.how,
        "delivery": args.delivery,
        "rate": args.rate,
        "minutes": args.minutes,
        "down_s": args.down,
        "period_s": args.period,
        "outages": len(outages),
        "sent": len(sent),
        "lost": len(set(sent) - set(watch.arrived)),
        "duplicates": watch.records - len(watch.arrived),
        "job_stops": log.count("jmsbridge stopped:"),
        "latency_p50_ms": quantile(before, 50),
        "latency_p99_ms": p99,
        "recovery_s": recovery,
        "recovery_max_s": max((r for r in recovery if r is not None), default=None),
    }


if __name__ == "__main__":
    main()
