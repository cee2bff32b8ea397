"""The baseline path of bench/ingress.py: Kafka -> JMS in a plain loop, no Spark.

One confluent-kafka consumer (`read_committed`) looks at the topic's high watermarks every
`--poll-backoff-ms` (as bench/topic_watch.py reads: no fetch held open on a caught-up topic, the same
for every broker) and reads each partition's new records with the bridge's own range reader
(`kafka_reading.read_range`: assign, read up to the watermark, unassign), partition after partition.
Each record is converted as the bridge's `native` route converts it (`ingress_converting.decode`, the
Kafka coordinates and key as properties) and sent persistent with the bridge's JPype adapter
(`bridge_job.jms`) in one transacted session, committed after every `--batch` messages and at the end of
each range. Offsets are not committed to Kafka: the loop starts at the high watermarks it found and keeps
its position in memory. Runs as its own process so that its CPU is accounted alone.

Protocol: `BENCH ready` on stdout once the consumer and the producer are up; stops when stdin closes.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, TopicPartition

from bridge_job.config import ConnectionFactorySpec, Format, JmsSource, JmsSpec
from bridge_job.formats import KafkaRecord
from bridge_job.ingress.converting import KafkaSource, decode, kafka_properties
from bridge_job.jms import JmsConnection, JmsProducer
from bridge_job.kafka.reading import read_range
from bridge_job.message import DeliveryMode, Destination, DestinationKind, JmsMessage
from jmsbridge.local import activemq_classpath


def converter(
    topic: str, partition: int, target: Destination
) -> Callable[[KafkaRecord, int, int], JmsMessage]:
    def convert(record: KafkaRecord, offset: int, timestamp_ms: int) -> JmsMessage:
        message = decode(record, Format.NATIVE, target)
        source = KafkaSource(topic, partition, offset, timestamp_ms)
        return dataclasses.replace(
            message,
            destination=target,
            delivery_mode=DeliveryMode.PERSISTENT,
            properties=message.properties | kafka_properties(record, source, "baseline"),
        )

    return convert


def send(producer: JmsProducer, messages: list[JmsMessage], batch: int) -> None:
    for i, message in enumerate(messages, 1):
        producer.send(message)
        if i % batch == 0 or i == len(messages):
            producer.commit()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", required=True, help="the JMS brokerURL (the bridge's, failover: included)")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--batch", type=int, default=500, help="messages per JMS transaction at most")
    parser.add_argument("--poll-backoff-ms", type=float, default=5.0)
    args = parser.parse_args()

    spec = JmsSpec(
        connection_factory=ConnectionFactorySpec(
            class_name="org.apache.activemq.ActiveMQConnectionFactory", properties={"brokerURL": args.url}
        ),
        sources=[JmsSource(queue="unused")],  # a JmsSpec needs one; this connection only sends
    )
    target = Destination(DestinationKind.QUEUE, args.queue)
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    metadata = consumer.list_topics(args.topic, timeout=30).topics[args.topic]
    partitions = sorted(metadata.partitions)
    converters = {p: converter(args.topic, p, target) for p in partitions}

    def high(partition: int) -> int:
        tp = TopicPartition(args.topic, partition)
        return int(consumer.get_watermark_offsets(tp, timeout=10, cached=False)[1])

    positions = {p: high(p) for p in partitions}
    stop = threading.Event()

    def stop_at_eof() -> None:
        sys.stdin.read()
        stop.set()

    with (
        JmsConnection(spec, classpath=activemq_classpath(), client_id="bench-ingress-baseline") as connection,
        connection.producer(transacted=True) as producer,
    ):
        threading.Thread(target=stop_at_eof, daemon=True).start()
        sys.stdout.write("BENCH ready\n")
        sys.stdout.flush()
        while not stop.is_set():
            idle = True
            for p in partitions:
                end = high(p)
                if end > positions[p]:
                    idle = False
                    messages = read_range(consumer, args.topic, p, positions[p], end, converters[p])
                    send(producer, messages, args.batch)
                    positions[p] = end
            if idle:
                stop.wait(args.poll_backoff_ms / 1000)
    consumer.close()


if __name__ == "__main__":
    main()
