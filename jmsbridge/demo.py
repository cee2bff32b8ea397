"""`jmsbridge demo`: the bridge on an embedded default, end to end, in about a minute.

Starts a local ActiveMQ, a local Apache Kafka (one KRaft node) and a local nats-server, runs the job in
local Spark on `examples/bridge.yaml` and `examples/routes.yaml` (pointed at those servers), sends JMS
messages of several kinds, prints what arrived in each topic; then a JMS requester asks a Kafka service
through the bridge and gets its reply back (a kafkaToJms route to the requester's JMSReplyTo,
docs/ingress.md), a NATS requester asks a JMS service the same way (a natsToJms route, docs/nats.md), and
everything stops. The two routes to the demo's own services are the demo's, added to the examples'.
"""

from __future__ import annotations

import argparse
import asyncio
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
        # The requesters' temporary queues only: a record names any destination it likes (docs/security.md)
        "jmsDestination": {"fromHeader": "jms.JMSReplyTo", "allowed": "queue://ID:.*"},
    },
}
NATS_SUBJECTS = "demo.orders.>"  # what the demo's natsToJms route takes
NATS_SUBJECT = "demo.orders.stock"
NATS_QUEUE = "demo.orders"  # the queue of the demo's JMS service
NATS_ROUTE = {
    "apiVersion": "jmsbridge.dev/v1alpha1",
    "kind": "JmsBridgeRoute",
    "metadata": {"name": "nats-orders"},
    "spec": {
        "bridgeRef": {"name": "orders"},
        "direction": "natsToJms",
        "natsSubject": NATS_SUBJECTS,
        "jmsDestination": {"queue": NATS_QUEUE},
        "timeoutSeconds": 60,
    },
}


def register(commands: Any) -> None:
    demo = commands.add_parser("demo", help="run the bridge on local brokers and show what arrives")
    demo.add_argument(
        "--examples", type=Path, default=EXAMPLES, help="folder with bridge.yaml and routes.yaml"
    )
    demo.set_defaults(run=run)


def localised(bridge: dict[str, Any], activemq_url: str, bootstrap: str, nats_url: str) -> dict[str, Any]:
    spec = bridge["spec"]
    url = spec["jms"]["connectionFactory"]["properties"]["brokerURL"]
    spec["jms"]["connectionFactory"]["properties"]["brokerURL"] = url.replace(
        "tcp://127.0.0.1:61616", activemq_url
    )
    spec["kafka"]["bootstrapServers"] = bootstrap
    spec.setdefault("nats", {})["servers"] = [nats_url]
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
    from jmsbridge.kafka_server import KafkaBroker
    from jmsbridge.local import ActiveMqBroker, BridgeJob, NatsServer, jms_connection, wait_until

    work = Path(tempfile.mkdtemp(prefix="jmsbridge-demo-"))
    print(f"starting ActiveMQ, Apache Kafka and NATS on loopback; work dir {work}", flush=True)
    activemq, kafka, nats = ActiveMqBroker().start(), KafkaBroker().start(), NatsServer().start()
    job = None
    try:
        bridge = localised(
            read_documents(args.examples / "bridge.yaml")[0][1], activemq.url, kafka.bootstrap, nats.url
        )
        (work / "bridge.yaml").write_text(yaml.safe_dump(bridge, sort_keys=False))
        routes = [d for _, d in read_documents(args.examples / "routes.yaml")]
        topics = sorted(
            {r["spec"]["kafkaTopic"] for r in routes} | {bridge["spec"]["routing"]["deadLetterTopic"]}
        )
        kafka.create_topics(*topics, REPLY_TOPIC)
        (work / "replies.yaml").write_text(yaml.safe_dump_all([REPLY_ROUTE, NATS_ROUTE], sort_keys=False))
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
        job.wait_log(f"subscribed to NATS subject {NATS_SUBJECTS}", timeout=180)
        nats_request_reply(activemq, nats.url)
        print("\ndemo done: every message arrived where its route sends it, and both replies came back")
        return 0
    finally:
        if job is not None:
            job.stop()
        activemq.cleanup()
        kafka.cleanup()
        nats.cleanup()


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


class JmsService:
    """A JMS service as JMS applications write it (ActiveMQ's client through JPype, plain javax.jms): it
    takes a request from its queue and answers to the request's JMSReplyTo with its JMSCorrelationID."""

    def __init__(self, activemq: Any, queue: str) -> None:
        import jpype

        from bridge_job.jms import start_jvm
        from jmsbridge.local import activemq_classpath

        start_jvm(activemq_classpath())
        factory = jpype.JClass("org.apache.activemq.ActiveMQConnectionFactory")(activemq.url)
        self.connection: Any = factory.createConnection()
        self.connection.start()
        auto_acknowledge = jpype.JClass("javax.jms.Session").AUTO_ACKNOWLEDGE
        self.session: Any = self.connection.createSession(False, auto_acknowledge)
        self.consumer = self.session.createConsumer(self.session.createQueue(queue))
        self.producer = self.session.createProducer(None)

    def answer_one(self, answer: str, timeout_ms: int = 180_000) -> str:
        """Answers the next request with `answer`; returns what the request looked like."""
        request = self.consumer.receive(timeout_ms)
        if request is None:
            raise TimeoutError(f"no request for the JMS service within {timeout_ms} ms")
        reply = self.session.createTextMessage(answer)
        reply.setJMSCorrelationID(request.getJMSCorrelationID())
        self.producer.send(request.getJMSReplyTo(), reply)
        return (
            f"    text={str(request.getText())!r}\n"
            f"    JMSReplyTo={request.getJMSReplyTo()} JMSCorrelationID={request.getJMSCorrelationID()}"
            f" NatsSubject={request.getStringProperty('NatsSubject')}"
        )

    def close(self) -> None:
        self.connection.close()


def nats_request_reply(activemq: Any, nats_url: str) -> None:
    """A NATS requester -> the bridge -> a JMS service -> the bridge -> the requester's reply subject."""
    import nats
    import nats.errors

    service = JmsService(activemq, NATS_QUEUE)
    question = b'{"order": 4, "question": "in stock?"}'

    async def send(client: Any) -> Any:
        # The bridge logs its subscription as nats-py takes it; the server may get it a moment later, and
        # answers a request that comes first with 503 (no responders): the requester asks again.
        deadline = time.monotonic() + 60
        while True:
            try:
                return await client.request(NATS_SUBJECT, question, timeout=120)
            except nats.errors.NoRespondersError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    async def ask() -> tuple[Any, str]:
        client = await nats.connect(nats_url)
        try:
            request = asyncio.ensure_future(send(client))
            answering = asyncio.ensure_future(
                asyncio.to_thread(service.answer_one, '{"order": 4, "answer": "yes, 3 left"}')
            )
            await asyncio.wait([request, answering], return_when=asyncio.FIRST_COMPLETED)
            # The answer may reach the requester before the service's thread returns: a reply is the
            # service's unless it is a status (an error, or a reply the service never sent).
            if not answering.done() and (request.exception() or "Status" in (request.result().headers or {})):
                service.close()  # ends the service's wait (it raises, having no request), and its thread
                await asyncio.gather(answering, return_exceptions=True)
                reply = await request
                raise RuntimeError(f"the NATS request got no answer from the JMS service: {reply.headers}")
            return await request, await answering
        finally:
            await client.close()

    try:
        print(f"\nNATS request/reply: a NATS requester sent a request on {NATS_SUBJECT} with a reply subject")
        reply, seen = asyncio.run(ask())
        print(f"  the JMS service got it from queue {NATS_QUEUE}, with JMSReplyTo the bridge's:\n{seen}")
        headers = ", ".join(f"{k}={v}" for k, v in (reply.headers or {}).items())
        print(
            "  and answered to its JMSReplyTo; the NATS requester received: "
            f"{reply.data.decode(errors='replace')}\n    headers: {headers}"
        )
    finally:
        service.close()
