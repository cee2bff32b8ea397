"""Throughput of the JMS adapter against a real ActiveMQ: 1 KB persistent text messages.

Not a test. Prints one JSON line (msg/s):

- send_auto: `JmsProducer.send` in an auto-acknowledged session (each persistent send waits for the
  broker's store);
- send_transacted: the same in a transacted session, committed every `--batch` messages;
- receive_batches: `BatchConsumer.receive_batch(--batch, 100)` + `commit`, the ingest loop's pattern,
  mapping every message to a `JmsMessage`;
- raw_receive: the same receive/commit loop in plain JPype calls with only `getText()`, as the baseline the
  mapping's cost is measured against.

Each message carries three typed properties. Run from the repository root:
`python bench/jms_adapter.py [--messages 20000] [--batch 200] [--url tcp://...] [--non-persistent]`
(without `--url` it starts a persistent ActiveMQ of its own, like the test fixture).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bridge_job.config import ConnectionFactorySpec, JmsSource, JmsSpec
from bridge_job.jms import JmsConnection, start_jvm
from bridge_job.jms.factories import connection_factory
from bridge_job.message import (
    DeliveryMode,
    Destination,
    DestinationKind,
    JmsMessage,
    Property,
    PropertyType,
)
from testbed.brokers import ActiveMqBroker, activemq_classpath


def spec_for(url: str) -> JmsSpec:
    return JmsSpec(
        connection_factory=ConnectionFactorySpec(
            class_name="org.apache.activemq.ActiveMQConnectionFactory", properties={"brokerURL": url}
        ),
        sources=[JmsSource(queue="unused")],
    )


def message_for(destination: Destination, i: int, delivery: DeliveryMode) -> JmsMessage:
    return JmsMessage(
        destination=destination,
        delivery_mode=delivery,
        body=f"{i:08d}" + "x" * 1016,
        properties={
            "source": Property(PropertyType.STRING, "bench"),
            "seq": Property(PropertyType.INT, i),
            "sentAt": Property(PropertyType.LONG, time.time_ns()),
        },
    )


def send(
    connection: JmsConnection,
    destination: Destination,
    count: int,
    batch: int,
    transacted: bool,
    delivery: DeliveryMode = DeliveryMode.PERSISTENT,
) -> float:
    messages = [message_for(destination, i, delivery) for i in range(count)]
    with connection.producer(transacted=transacted) as producer:
        started = time.perf_counter()
        for i, message in enumerate(messages, 1):
            producer.send(message)
            if transacted and i % batch == 0:
                producer.commit()
        if transacted:
            producer.commit()
        return count / (time.perf_counter() - started)


def receive(connection: JmsConnection, queue: str, count: int, batch: int) -> float:
    received = 0
    with connection.consumer(JmsSource(queue=queue)) as consumer:
        started = time.perf_counter()
        while received < count:
            messages = consumer.receive_batch(batch, 100)
            if not messages:
                raise RuntimeError(f"queue {queue} ran dry after {received} of {count} messages")
            consumer.commit()
            received += len(messages)
        return received / (time.perf_counter() - started)


def raw_receive(spec: JmsSpec, queue: str, count: int, batch: int) -> float:
    connection = connection_factory(spec).createConnection()
    try:
        connection.start()
        session = connection.createSession(True, 0)
        consumer = session.createConsumer(session.createQueue(queue))
        received = in_batch = 0
        started = time.perf_counter()
        while received < count:
            m = consumer.receive(100)
            if m is None:
                if in_batch == 0:
                    raise RuntimeError(f"queue {queue} ran dry after {received} of {count} messages")
                in_batch = 0
                session.commit()
                continue
            str(m.getText())
            received += 1
            in_batch += 1
            if in_batch == batch:
                in_batch = 0
                session.commit()
        session.commit()
        return received / (time.perf_counter() - started)
    finally:
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=200, help="ActiveMQ pages 200 messages per queue")
    parser.add_argument("--url", help="an existing broker (default: start one)")
    parser.add_argument("--non-persistent", action="store_true", help="send NON_PERSISTENT messages")
    args = parser.parse_args()

    broker = None if args.url else ActiveMqBroker(persistent=True).start()
    url = args.url or broker.url  # type: ignore[union-attr]
    try:
        start_jvm(activemq_classpath())
        spec = spec_for(url)
        run = uuid.uuid4().hex[:8]
        main_queue, raw_queue = f"bench.adapter.{run}", f"bench.raw.{run}"
        main, raw = (Destination(DestinationKind.QUEUE, q) for q in (main_queue, raw_queue))
        n = args.messages
        delivery = DeliveryMode.NON_PERSISTENT if args.non_persistent else DeliveryMode.PERSISTENT
        with JmsConnection(spec) as connection:
            send_auto = send(connection, main, n, args.batch, False, delivery)
            send_transacted = send(connection, main, n, args.batch, True, delivery)
            receive_batches = receive(connection, main_queue, 2 * n, args.batch)
            send(connection, raw, n, args.batch, True, delivery)
        raw_receive_rate = raw_receive(spec, raw_queue, n, args.batch)
        print(
            json.dumps(
                {
                    "messages": n,
                    "body_bytes": 1024,
                    "delivery": delivery.name.lower().replace("_", "-"),
                    "batch": args.batch,
                    "send_auto_msg_s": round(send_auto),
                    "send_transacted_msg_s": round(send_transacted),
                    "receive_batches_msg_s": round(receive_batches),
                    "raw_receive_msg_s": round(raw_receive_rate),
                }
            )
        )
    finally:
        if broker is not None:
            broker.cleanup()


if __name__ == "__main__":
    main()
