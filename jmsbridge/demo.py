"""`jmsbridge demo`: the bridge on an embedded default, end to end, in about a minute.

Starts a local ActiveMQ and a local Kafka-protocol broker (noida-db), runs the job in local Spark on
`examples/bridge.yaml` and `examples/routes.yaml` (pointed at those brokers), sends JMS messages of
several kinds, prints what arrived in each topic; then a JMS requester asks a Kafka service through the
bridge and gets its reply back (a kafkaToJms route to the requester's JMSReplyTo, docs/ingress.md), and
everything stops.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
REPLY_TOPIC = "orders.replies"
REPLY_ROUTE = {
    "apiVersion": "jmsbridge.dev/v1alpha1",
    "kind": "JmsBridgeRoute",
    "metadata": {"name": "replies"},
    "spec": {
        "bridgeRef": {"name": "orders"},
        "direction": "kafkaToJms",
        "kafkaTopic": REPLY_TOPIC,
        "jmsDestination": {"fromHeader": "jms.JMSReplyTo"},
    },
}


def register(commands: Any) -> None:
    demo = commands.add_parser("demo", help="run the bridge on local brokers and show what arrives")
    demo.add_argument(
        "--examples", type=Path, default=EXAMPLES, help="folder with bridge.yaml and routes.yaml"
    )
    demo.set_defaults(run=run)


def localised(bridge: dict[str, Any], activemq_url: str, bootstrap: str) -> dict[str, Any]:
    spec = bridge["spec"]
    url = spec["jms"]["connectionFactory"]["properties"]["brokerURL"]
    spec["jms"]["connectionFactory"]["properties"]["brokerURL"] = url.replace(
        "tcp://127.0.0.1:61616", activemq_url
    )
    spec["kafka"]["bootstrapServers"] = bootstrap
    return bridge


def messages() -> list[Any]:
    from bridge_job.message import BodyType, Destination, DestinationKind, JmsMessage, Property, PropertyType

    orders = Destination(DestinationKind.QUEUE, "orders.in")
    customer = {"customerId": Property(PropertyType.LONG, 42), "amount": Property(PropertyType.DOUBLE, 99.5)}
    return [
        JmsMessage(
            orders, body='{"order": 1}', type="priority", correlation_id="rush-1", properties=customer
        ),
        JmsMessage(orders, body='{"order": 2}', type="normal", properties=customer),
        JmsMessage(orders, body="no customer id: dead-lettered", type="normal"),
        JmsMessage(Destination(DestinationKind.QUEUE, "payments.in"), BodyType.BYTES, body=b"\x01\x02\x03"),
        JmsMessage(Destination(DestinationKind.TOPIC, "prices"), body="EURUSD 1.0842"),
    ]


def show(record: Any) -> str:
    headers = ", ".join(f"{k}={v.decode(errors='replace')}" for k, v in record.headers() or [])
    key = (record.key() or b"").decode(errors="replace")
    value = record.value()
    return f"  key={key!r} value={value!r}\n    headers: {headers}"


def run(args: argparse.Namespace) -> int:
    from confluent_kafka import Consumer, TopicPartition

    from bridge_job.config.loading import read_documents
    from jmsbridge.local import ActiveMqBroker, BridgeJob, KafkaBroker, jms_connection, wait_until

    work = Path(tempfile.mkdtemp(prefix="jmsbridge-demo-"))
    print(f"starting ActiveMQ and Kafka (noida-db) on loopback; work dir {work}", flush=True)
    activemq, kafka = ActiveMqBroker().start(), KafkaBroker().start()
    job = None
    try:
        bridge = localised(read_documents(args.examples / "bridge.yaml")[0][1], activemq.url, kafka.bootstrap)
        (work / "bridge.yaml").write_text(yaml.safe_dump(bridge, sort_keys=False))
        routes = [d for _, d in read_documents(args.examples / "routes.yaml")]
        topics = sorted(
            {r["spec"]["kafkaTopic"] for r in routes} | {bridge["spec"]["routing"]["deadLetterTopic"]}
        )
        kafka.create_topics(*topics, REPLY_TOPIC)
        (work / "replies.yaml").write_text(yaml.safe_dump(REPLY_ROUTE, sort_keys=False))
        files = [work / "bridge.yaml", args.examples / "routes.yaml", work / "replies.yaml"]
        job = BridgeJob(files, work).start()
        print("starting the bridge job (local Spark)...", flush=True)
        job.wait_running(timeout=300)

        sent = messages()
        with jms_connection(activemq) as connection, connection.producer() as producer:
            for message in sent:
                producer.send(message)
        print(f"sent {len(sent)} JMS messages; waiting for them in Kafka...", flush=True)

        consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "demo"})
        consumer.assign([TopicPartition(t, 0, 0) for t in topics])
        arrived: list[Any] = []

        def all_arrived() -> bool:
            arrived.extend(m for m in consumer.consume(100, timeout=0.2) if m.error() is None)
            return len(arrived) >= len(sent)

        wait_until(all_arrived, 180, "the demo messages in Kafka")
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            arrived.extend(m for m in consumer.consume(100, timeout=0.2) if m.error() is None)
        consumer.close()
        for topic in topics:
            records = [m for m in arrived if m.topic() == topic]
            print(f"\ntopic {topic}: {len(records)} record(s)")
            for record in records:
                print(show(record))
        request_reply(activemq, kafka)
        print("\ndemo done: every message arrived where its route sends it, and the reply came back")
        return 0
    finally:
        if job is not None:
            job.stop()
        activemq.cleanup()
        kafka.cleanup()


def request_reply(activemq: Any, kafka: Any) -> None:
    """A JMS requester -> the bridge -> a Kafka service -> the bridge -> the requester's TemporaryQueue."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    from jmsbridge.local import JmsRequester, wait_until

    requester = JmsRequester(activemq, "orders.in")
    try:
        requester.request('{"order": 3, "question": "in stock?"}', "ask-1", {"customerId": "7"})
        print("\nrequest/reply: a JMS requester sent a request with JMSReplyTo its temporary queue")
        # The Kafka service: find the request in `orders`, answer on REPLY_TOPIC with its reply headers.
        consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "demo-service"})
        consumer.assign([TopicPartition("orders", 0, 0)])
        found: list[Any] = []

        def request_arrived() -> bool:
            for m in consumer.consume(100, timeout=0.2):
                if m.error() is None and dict(m.headers() or []).get("jms.JMSCorrelationID") == b"ask-1":
                    found.append(m)
            return bool(found)

        wait_until(request_arrived, 180, "the request in Kafka topic orders")
        consumer.close()
        request = found[0]
        print(f"  the Kafka service got it from topic orders:\n{show(request)}")
        headers = [
            (k, v) for k, v in request.headers() or [] if k in ("jms.JMSReplyTo", "jms.JMSCorrelationID")
        ]
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        producer.produce(REPLY_TOPIC, b'{"order": 3, "answer": "yes, 12 left"}', headers=headers)
        producer.flush(30)
        correlation, text = requester.reply(180_000)
        print(
            f"  and answered on {REPLY_TOPIC}; the requester received: JMSCorrelationID={correlation} {text}"
        )
    finally:
        requester.close()
