"""The baseline path of bench/egress.py: JMS -> Kafka in a plain loop, no journal, no Spark.

One transacted JMS consumer (the bridge's JPype adapter, `bridge_job.jms`) takes batches off the queue
(`receive_batch(--batch, --delay-ms)`, by default the bridge's own ingest settings); each message is
encoded in the `native` format (as the bridge's default route writes it) and produced to the topic with
confluent-kafka (idempotent, `linger.ms` 5, keyed by JMSMessageID); after `flush()` the JMS session is
committed. Runs as its own process so that its CPU is accounted alone.

With `--journal TOPIC` the loop is the journaled straight path: each batch is produced to the journal
topic first and flushed, read back from it (the bridge's range reader, `bridge_job.kafka.reading`), and
what was read is produced to the topic; the JMS session is committed after that flush. Still one
process, no Spark: what a journal costs by itself.

Protocol: `BENCH ready` on stdout once the consumer and the producer are up; stops when stdin closes (or
on SIGTERM), committing nothing more.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from typing import Any

from confluent_kafka import Consumer, Producer

from bridge_job.config import ConnectionFactorySpec, JmsSource, JmsSpec
from bridge_job.formats import KafkaRecord, native
from bridge_job.jms import JmsConnection
from bridge_job.kafka.reading import read_range
from jmsbridge.local import activemq_classpath

Keyed = tuple[str | bytes | None, KafkaRecord]


def produce(producer: Producer, topic: str, key: str | bytes | None, record: KafkaRecord) -> None:
    while True:
        try:
            headers: Any = record.headers  # a list of (str, bytes) pairs, which librdkafka takes
            producer.produce(topic, record.value, key, headers=headers)
            return
        except BufferError:
            producer.poll(0.1)


def journaled(producer: Producer, reader: Consumer, journal: str, records: list[Keyed]) -> list[Keyed]:
    """`records` written to the journal, flushed, and read back from it."""
    offsets: list[int] = []

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            offsets.append(int(message.offset()))

    for key, record in records:
        headers: Any = record.headers
        while True:
            try:
                producer.produce(journal, record.value, key, headers=headers, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
    producer.flush(30)
    if len(offsets) < len(records):
        raise RuntimeError("the journal did not take the batch")

    def read_back(
        value: KafkaRecord, offset: int, timestamp_ms: int
    ) -> tuple[str | bytes | None, KafkaRecord]:
        return value.key, value

    return read_range(reader, journal, 0, min(offsets), max(offsets) + 1, read_back)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the JMS brokerURL (the bridge's, failover: included)")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--delay-ms", type=int, default=100)
    parser.add_argument("--journal", default=None, help="a topic (one partition) to go through first")
    args = parser.parse_args()

    stop = threading.Event()
    spec = JmsSpec(
        connection_factory=ConnectionFactorySpec(
            class_name="org.apache.activemq.ActiveMQConnectionFactory", properties={"brokerURL": args.url}
        ),
        sources=[JmsSource(queue=args.queue)],
    )
    producer = Producer({"bootstrap.servers": args.bootstrap, "enable.idempotence": True, "linger.ms": 5})
    journal_reader = Consumer(
        {"bootstrap.servers": args.bootstrap, "group.id": "bench-journal", "enable.auto.commit": False}
    )
    with JmsConnection(spec, classpath=activemq_classpath(), client_id="bench-baseline") as connection:
        consumer = connection.consumer(JmsSource(queue=args.queue))

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stop.set()

        # After the JVM has started: it installs handlers of its own.
        signal.signal(signal.SIGTERM, on_signal)

        def stop_at_eof() -> None:
            sys.stdin.read()
            stop.set()

        threading.Thread(target=stop_at_eof, daemon=True).start()
        producer.list_topics(args.topic, timeout=30)  # metadata fetched before the load starts
        sys.stdout.write("BENCH ready\n")
        sys.stdout.flush()
        while not stop.is_set():
            batch = consumer.receive_batch(args.batch, args.delay_ms)
            if not batch:
                continue
            records: list[Keyed] = [(m.message_id, native.encode(m, "baseline")) for m in batch]
            if args.journal is not None:
                records = journaled(producer, journal_reader, args.journal, records)
            for key, record in records:
                produce(producer, args.topic, key, record)
            remaining = producer.flush(30)
            if remaining:
                consumer.rollback()  # redelivered by the broker; the benchmark would see a stall
                continue
            consumer.commit()
        consumer.close()


if __name__ == "__main__":
    main()
