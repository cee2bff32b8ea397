"""Request/reply across the bridge, on real brokers: JMS requesters with temporary queues, a Kafka service.

The requesters use the ActiveMQ client's own javax.jms API (through JPype, as any JMS application
would): each has its connection and its TemporaryQueue, sets JMSReplyTo and JMSCorrelationID. The
service is a confluent-kafka consumer and producer that answers each request record with a reply record
carrying the request's `jms.JMSReplyTo` and `jms.JMSCorrelationID` headers, as docs/ingress.md says.
The other way, Kafka requesters and JMS services of either convention (tests/support/jms_services.py).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, Producer

from jmsbridge.local import BridgeJob, JmsBroker, JmsRequester
from testbed.apiserver.chart import job_kubeconfig
from testbed.apiserver.client import KubeApi
from testbed.brokers import ActiveMqBroker, KafkaBroker
from testbed.harness import (
    ONE_AT_A_TIME,
    bridge_document,
    read_topics,
    route_document,
    to_jms_route,
    write_yaml,
)
from tests.support.jms_services import answer_requests
from tests.support.providers import JmsProvider

pytestmark = pytest.mark.e2e

REPLY_HEADERS = ("jms.JMSReplyTo", "jms.JMSCorrelationID")
Headers = list[tuple[str, str | bytes | None]]  # as confluent-kafka takes them


@contextmanager
def kafka_service(kafka: KafkaBroker, requests: str, replies: str) -> Iterator[None]:
    """Answers every request record with `re: <value>` on `replies`, until the block ends."""
    stop = threading.Event()

    def serve() -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": kafka.bootstrap,
                "group.id": f"svc-{uuid.uuid4().hex}",
                "auto.offset.reset": "earliest",
            }
        )
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        consumer.subscribe([requests])
        try:
            while not stop.is_set():
                for request in consumer.consume(100, timeout=0.2):
                    if request.error() is not None:
                        continue
                    pairs = cast(list[tuple[str, bytes]], request.headers() or [])
                    headers: Headers = [(k, v) for k, v in pairs if k in REPLY_HEADERS]
                    producer.produce(replies, b"re: " + (request.value() or b""), headers=headers)
                producer.flush(10)
        finally:
            consumer.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(30)


# Request/reply on ActiveMQ Classic and on Artemis through its Jakarta client: message ids, temporary
# queues and their names differ between brokers, and Artemis' javax client is the same client under the
# other package (the round trip and the login tests run it).
ON_BOTH_BROKERS = pytest.mark.parametrize("provider", ["activemq", "artemis-jakarta"], indirect=True)


@ON_BOTH_BROKERS
def test_jms_requesters_get_their_replies_from_a_kafka_service(
    provider: JmsProvider, kafka: KafkaBroker, tmp_path: Path
) -> None:
    activemq = provider.broker
    n = uuid.uuid4().hex[:8]
    requests_queue, requests, replies, bridge = (
        f"svc.{n}.in",
        f"svc-{n}-requests",
        f"svc-{n}-replies",
        f"rr-{n}",
    )
    kafka.create_topics(requests, replies)
    files = [
        write_yaml(
            tmp_path / "bridge.yaml",
            bridge_document(bridge, activemq, kafka, [{"queue": requests_queue}], jms=provider.jms()),
            route_document("requests", bridge, requests, match={"address": requests_queue}),
            to_jms_route(
                "replies", bridge, replies, {"fromHeader": "jms.JMSReplyTo", "allowed": "queue://ID:.*"}
            ),
        )
    ]
    requesters = [JmsRequester(activemq, requests_queue) for _ in range(3)]
    job = BridgeJob(files, tmp_path, env=provider.job_env()).start()
    try:
        with kafka_service(kafka, requests, replies):
            for number, requester in enumerate(requesters):
                for i in range(4):
                    requester.request(f"q{number}.{i}", f"r{number}-{i}")
            answers = [sorted(r.reply() for _ in range(4)) for r in requesters]
    finally:
        job.stop()
        for requester in requesters:
            requester.close()
    for number, got in enumerate(answers):
        assert got == [(f"r{number}-{i}", f"re: q{number}.{i}") for i in range(4)]


def requests_bridge(
    tmp_path: Path,
    activemq: JmsBroker,
    kafka: KafkaBroker,
    bridge: str,
    reply_queue: str,
    route: dict[str, Any],
    provider: JmsProvider | None = None,
    **spec: Any,
) -> list[Path]:
    """The files of a bridge taking answers from `reply_queue`, with one request route."""
    jms = (provider.jms() if provider is not None else {}) | {"replyQueue": reply_queue}
    document = bridge_document(bridge, activemq, kafka, [{"queue": reply_queue}], jms=jms, **spec)
    return [write_yaml(tmp_path / "bridge.yaml", document, route)]


@ON_BOTH_BROKERS
def test_kafka_requesters_get_their_replies_from_a_jms_service(
    provider: JmsProvider, kafka: KafkaBroker, tmp_path: Path
) -> None:
    activemq = provider.broker
    n = uuid.uuid4().hex[:8]
    requests, service, reply_queue, bridge = f"req-{n}", f"svc.{n}", f"replies.{n}", f"kr-{n}"
    replies_a, replies_b, elsewhere, dlq = f"ra-{n}", f"rb-{n}", f"other-{n}", f"dlq-{n}"
    kafka.create_topics(requests, replies_a, replies_b, elsewhere, dlq)
    route = to_jms_route(
        "requests", bridge, requests, {"queue": service}, reply={"topics": [replies_a, replies_b]}
    )
    policy = {"deadLetterTopic": dlq, "onSoftFailure": "deadLetter"}
    files = requests_bridge(tmp_path, activemq, kafka, bridge, reply_queue, route, provider, routing=policy)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for i in range(3):  # requester a names its correlation id in a header, requester b by the key
        to_a: Headers = [
            ("jmsbridge.replyTopic", replies_a.encode()),
            ("jms.JMSCorrelationID", f"a-{i}".encode()),
        ]
        producer.produce(requests, f"a{i}".encode(), headers=to_a)
        to_b: Headers = [("jmsbridge.replyTopic", replies_b.encode())]
        producer.produce(requests, f"b{i}".encode(), f"b-{i}".encode(), headers=to_b)
    producer.produce(requests, b"x", b"x-0", headers=[("jmsbridge.replyTopic", elsewhere.encode())])
    assert producer.flush(30) == 0
    job = BridgeJob(files, tmp_path, env=provider.job_env()).start()
    try:
        answer_requests(activemq, service, 6)
        got_a = read_topics(kafka, [replies_a], 3)
        got_b = read_topics(kafka, [replies_b], 3)
        (letter,) = read_topics(kafka, [dlq], 1)
    finally:
        job.stop()
    assert sorted((r.key, r.value, r.header("jms.JMSCorrelationID")) for r in got_a) == [
        (f"a-{i}".encode(), f"re: a{i}".encode(), f"a-{i}".encode()) for i in range(3)
    ]
    assert sorted((r.key, r.value) for r in got_b) == [
        (f"b-{i}".encode(), f"re: b{i}".encode()) for i in range(3)
    ]
    assert letter.value == b"x" and letter.header("jmsbridge.deadletter.reason") == b"ReplyTopicRefused"


@ONE_AT_A_TIME  # an active/standby pair
def test_a_message_id_service_answers_a_kafka_requester_across_a_failover(
    kube_api: KubeApi, activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    """The active instance is killed once the service has taken the requests and before it answers: the
    standby takes over, finds the pending requests the other one wrote in Kafka and routes every answer,
    once (`exactlyOnce`). (A job restarted alone finds them the same way, when it starts.)"""
    n = uuid.uuid4().hex[:8]
    requests, service, reply_queue, replies, bridge = f"req-{n}", f"svc.{n}", f"rq.{n}", f"ra-{n}", f"mf-{n}"
    kafka.create_topics(requests, replies)
    reply = {"topics": [replies], "correlation": "messageId", "timeoutSeconds": 600}
    route = to_jms_route("requests", bridge, requests, {"queue": service}, reply=reply)
    document = bridge_document(
        bridge,
        activemq,
        kafka,
        [{"queue": reply_queue}],
        jms={"replyQueue": reply_queue},
        delivery="exactlyOnce",
        # The default lease: under the whole suite's load a new active's first renewal once took longer
        # than a 4 s lease allows, and what this tests is the answers, not the takeover's speed.
        failover={"standby": True, "leaseDurationSeconds": 10},
    )
    for resource in (document, route):
        resource["metadata"]["namespace"] = "apps"
    files = [write_yaml(tmp_path / "bridge.yaml", document, route)]
    send_requests(kafka, requests, replies, 3)
    kubeconfig = job_kubeconfig(kube_api, "apps", bridge=bridge)

    def instance(name: str) -> BridgeJob:
        env = {"HOSTNAME": f"pod-{name}", "KUBECONFIG": str(kubeconfig)}  # as the bridge's own pods
        return BridgeJob(files, tmp_path, instance=name, master="local[1]", env=env)

    active, standby = instance("a"), instance("b")
    try:
        active.start().wait_running(180)
        standby.start().wait_log("standby: waiting for lease", 180)
        answer_requests(activemq, service, 3, by_message_id=True, before_answering=active.kill)
        standby.wait_running(180)  # it took over
        got = read_topics(kafka, [replies], 3, timeout=240, settle=1.0)
    finally:
        active.kill()
        standby.kill()
    assert sorted((r.key, r.value, r.header("jms.JMSCorrelationID")) for r in got) == [
        (f"k-{i}".encode(), f"re: q{i}".encode(), f"k-{i}".encode()) for i in range(3)
    ]


def send_requests(kafka: KafkaBroker, requests: str, replies: str, count: int) -> None:
    """`count` Kafka requests `q<i>` for the reply topic `replies`, correlation ids `k-<i>`."""
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for i in range(count):
        headers: Headers = [
            ("jmsbridge.replyTopic", replies.encode()),
            ("jms.JMSCorrelationID", f"k-{i}".encode()),
        ]
        producer.produce(requests, f"q{i}".encode(), headers=headers)
    assert producer.flush(30) == 0
