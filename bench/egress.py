"""Egress benchmark: 1 KB JMS messages through the bridge, against a no-Spark baseline in the same run.

    python bench/egress.py [--messages 20000] [--latency-messages 1000] [--rate 200]

Prints one JSON line. Both paths use the same clients (the JPype JMS adapter, confluent-kafka) and
the same brokers (ActiveMQ persistent, noida-db):

- bridge: `jmsbridge job` (ingest -> journal -> Spark query -> topic);
- baseline: one transacted JMS consumer producing straight to the topic, committing after each flush.

Throughput: N messages preloaded on the queue, then drained; measured from the moment a consumer of the
destination topic sees the first record to the moment it sees the last (startup is not counted; the
bridge runs in micro-batches of 2,000). Latency: messages sent at a fixed rate while the path runs,
JMSTimestamp (set by the broker client at send) to the moment a Kafka consumer sees the record.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bridge_job.formats import native
from bridge_job.jms import detach_thread
from bridge_job.message import Destination, DestinationKind, JmsMessage, Property
from jmsbridge.local import ActiveMqBroker, BridgeJob, KafkaBroker, jms_connection
from tests.job.harness import (
    bridge_document,
    route_document,
    write_yaml,
)

BODY = "x" * 1024


def preload(activemq: ActiveMqBroker, queue: str, count: int) -> None:
    destination = Destination(DestinationKind.QUEUE, queue)
    with jms_connection(activemq) as connection, connection.producer(transacted=True) as producer:
        for seq in range(count):
            producer.send(JmsMessage(destination, body=BODY, properties={"seq": Property.of(seq)}))
            if seq % 500 == 499:
                producer.commit()
        producer.commit()


def drain(kafka: KafkaBroker, topic: str, count: int, timeout: float = 600) -> list[tuple[int, float]]:
    """(record timestamp ms, time seen) for `count` records of `topic`."""
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": uuid.uuid4().hex})
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen: list[tuple[int, float]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(seen) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(seen)} of {count} records in {topic}")
            for message in consumer.consume(10_000, timeout=0.2):
                if message.error() is None:
                    seen.append((message.timestamp()[1], time.time()))
    finally:
        consumer.close()
    return seen


def paced_latencies(
    activemq: ActiveMqBroker, kafka: KafkaBroker, queue: str, topic: str, count: int, rate: float
) -> list[float]:
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": uuid.uuid4().hex})
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
    consumer.assign([TopicPartition(topic, 0, high)])
    latencies: list[float] = []

    def send() -> None:
        destination = Destination(DestinationKind.QUEUE, queue)
        try:
            with jms_connection(activemq) as connection, connection.producer() as producer:
                began = time.monotonic()
                for seq in range(count):
                    time.sleep(max(0.0, began + seq / rate - time.monotonic()))  # pacing, not waiting
                    producer.send(JmsMessage(destination, body=BODY, properties={"seq": Property.of(seq)}))
        finally:
            detach_thread()

    sender = threading.Thread(target=send)
    sender.start()
    deadline = time.monotonic() + count / rate + 300
    try:
        while len(latencies) < count and time.monotonic() < deadline:
            for message in consumer.consume(1000, timeout=0.05):
                if message.error() is None:
                    now = time.time() * 1000
                    sent = dict(message.headers() or []).get("jms.JMSTimestamp")
                    if sent is not None:
                        latencies.append(now - int(sent))
    finally:
        consumer.close()
        sender.join()
    return latencies


def figures(seen: list[tuple[int, float]], latencies: list[float]) -> dict[str, float]:
    # From the first record a consumer saw to the last: startup is not counted, every later batch is.
    times = sorted(t for _, t in seen)
    span = max(times[-1] - times[0], 1e-3)
    q = statistics.quantiles(latencies, n=100) if len(latencies) >= 2 else [0.0] * 99
    return {
        "throughput_msg_s": round((len(seen) - 1) / span, 1),
        "latency_p50_ms": round(q[49], 1),
        "latency_p99_ms": round(q[98], 1),
    }


def run_baseline(
    activemq: ActiveMqBroker, kafka: KafkaBroker, queue: str, topic: str, stop: threading.Event
) -> None:
    """The same JMS consume -> Kafka produce path, without journal or Spark."""
    from bridge_job.config import JmsSource

    try:
        producer = Producer(
            {"bootstrap.servers": kafka.bootstrap, "enable.idempotence": True, "linger.ms": 5}
        )
        with jms_connection(activemq) as connection:
            consumer = connection.consumer(JmsSource(queue=queue))
            while not stop.is_set():
                batch = consumer.receive_batch(500, 100)
                for message in batch:
                    record = native.encode(message, "baseline")
                    producer.produce(topic, record.value, message.message_id, headers=record.headers)  # type: ignore[arg-type]
                producer.flush()
                consumer.commit()
            consumer.close()
    finally:
        detach_thread()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--latency-messages", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=200.0)
    args = parser.parse_args()

    activemq, kafka = ActiveMqBroker().start(), KafkaBroker().start()
    work = Path(tempfile.mkdtemp(prefix="jmsbridge-bench-"))
    try:
        # Baseline
        kafka.create_topics("baseline")
        preload(activemq, "bench.baseline", args.messages)
        stop = threading.Event()
        baseline = threading.Thread(
            target=run_baseline, args=(activemq, kafka, "bench.baseline", "baseline", stop)
        )
        baseline.start()
        seen = drain(kafka, "baseline", args.messages)
        latencies = paced_latencies(
            activemq, kafka, "bench.baseline", "baseline", args.latency_messages, args.rate
        )
        stop.set()
        baseline.join()
        base = figures(seen, latencies)

        # Bridge
        kafka.create_topics("bridged")
        preload(activemq, "bench.bridge", args.messages)
        # Batches of 2,000 so that the drain spans many micro-batches, not one burst.
        bridge = bridge_document(
            "bench", activemq, kafka, [{"queue": "bench.bridge"}], spark={"maxRecordsPerBatch": 2000}
        )
        route = route_document("all", "bench", "bridged")
        files = [write_yaml(work / "bridge.yaml", bridge), write_yaml(work / "routes.yaml", route)]
        job = BridgeJob(files, work).start()
        try:
            job.wait_running(timeout=300)
            seen = drain(kafka, "bridged", args.messages)
            latencies = paced_latencies(
                activemq, kafka, "bench.bridge", "bridged", args.latency_messages, args.rate
            )
        finally:
            job.stop()
        bridged = figures(seen, latencies)
    finally:
        activemq.cleanup()
        kafka.cleanup()

    print(
        json.dumps(
            {
                "benchmark": "egress",
                "messages": args.messages,
                "message_bytes": len(BODY),
                "bridge": bridged,
                "baseline": base,
                "throughput_ratio": round(bridged["throughput_msg_s"] / base["throughput_msg_s"], 3),
                "latency_p50_ratio": round(bridged["latency_p50_ms"] / max(base["latency_p50_ms"], 0.1), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
