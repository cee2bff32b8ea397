"""Request/reply with JMS parties of the message-id convention, on real brokers (ActiveMQ, Apache Kafka), the
ingress and egress tasks in this process (no Spark): what the job's tasks do, checked as the requester
sees it. The answers reach the journal as the ingest writes it (read from the reply queue, journalled)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType  # type: ignore[attr-defined]

from bridge_job.config import JmsBridge, JmsBridgeRoute, JobConfig, job_config, journal_reader_group
from bridge_job.egress import pending_requests as egress_pending
from bridge_job.egress import task as egress_task
from bridge_job.faults.stops import BridgeStopped
from bridge_job.ingress import task as ingress_task
from bridge_job.kafka.compacted import CompactedTopic
from bridge_job.kafka.reading import close_consumers
from bridge_job.kafka.writing import close_producers
from bridge_job.message import Destination, DestinationKind, JmsMessage
from bridge_job.routing.pending import PendingRequest, pending_record
from bridge_job.supervision.topics import ensure_pending_topic
from jmsbridge.local import JmsRequester
from testbed.brokers import ActiveMqBroker, KafkaBroker
from testbed.harness import (
    bridge_document,
    eventually,
    read_topics,
    received_from,
    route_document,
    to_jms_route,
)
from tests.support.jms_services import answer_requests
from tests.support.journal import journal


@pytest.fixture(autouse=True, scope="module")
def clients() -> Iterator[None]:
    """The tasks keep their Kafka clients per process, as in a Spark worker: close them after the module."""
    yield
    close_consumers()
    close_producers()


NAMES = {"requests_topic": "req-{n}", "replies_topic": "rep-{n}", "service": "svc.{n}"}
Headers = list[tuple[str, str | bytes | None]]  # as confluent-kafka takes them


@dataclass
class Bridge:
    config: JobConfig
    path: str
    names: dict[str, str]

    def __getattr__(self, name: str) -> str:
        return self.names[name]


RouteFor = Callable[[dict[str, str]], dict[str, Any]]  # a route document, given the bridge's names


def bridge(
    kafka: KafkaBroker,
    activemq: ActiveMqBroker,
    tmp_path: Path,
    *routes: RouteFor,
    sources: tuple[str, ...] = ("reply_queue",),
    **spec: Any,
) -> Bridge:
    """A bridge of new names (`NAMES`) whose reply queue is `replies.<n>`, dead-lettering soft failures;
    `sources` name the queues it takes from."""
    n = uuid.uuid4().hex[:8]
    named = {k: v.format(n=n) for k, v in NAMES.items()}
    named |= {"bridge": f"mi-{n}", "reply_queue": f"replies.{n}", "dlq": f"dlq-{n}"}
    document = bridge_document(
        named["bridge"],
        activemq,
        kafka,
        [{"queue": named[source]} for source in sources],
        jms={"replyQueue": named["reply_queue"]},
        routing={"deadLetterTopic": named["dlq"], "onSoftFailure": "deadLetter"},
        **spec,
    )
    # A new ActiveMQ Classic connection takes a temporary queue it has not yet heard of from the broker's
    # advisories for a deleted one and refuses to send to it; the ingress's connection is new in each test.
    factory = document["spec"]["jms"]["connectionFactory"]["properties"]
    factory["brokerURL"] += "&jms.watchTopicAdvisories=false"
    specs = [JmsBridgeRoute.model_validate(r(named)) for r in routes]
    config = job_config(JmsBridge.model_validate(document), specs)
    topics = [v for k, v in named.items() if k.endswith("topic") or k == "dlq"]
    kafka.create_topics(*topics, config.journal_topic, config.pending_topic)
    path = tmp_path / f"job-{n}.yaml"
    path.write_text(yaml.safe_dump(config.dump()))
    return Bridge(config, str(path), named)


def requests_route(**reply: Any) -> Any:
    def make(named: dict[str, str]) -> dict[str, Any]:
        spec = {"topics": [named["replies_topic"]], "correlation": "messageId"} | reply
        return to_jms_route(
            "requests", named["bridge"], named["requests_topic"], {"queue": named["service"]}, reply=spec
        )

    return make


def request(kafka: KafkaBroker, b: Bridge, *correlation_ids: str) -> None:
    """Kafka requesters: one record per correlation id, naming the reply topic."""
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for cid in correlation_ids:
        headers: Headers = [
            ("jmsbridge.replyTopic", b.replies_topic.encode()),
            ("jms.JMSCorrelationID", cid.encode()),
        ]
        producer.produce(b.requests_topic, f"q-{cid}".encode(), headers=headers)
    assert producer.flush(30) == 0


def pending_entries(kafka: KafkaBroker, b: Bridge) -> dict[bytes, bytes]:
    """The pending requests as a new process reads them."""
    table = CompactedTopic(b.config.bridge.kafka, b.config.pending_topic, journal_reader_group(b.bridge))
    table.get(b"ID:none")  # reads the topic up to its end
    return table.snapshot()


def test_kafka_requesters_get_the_answers_of_a_message_id_service(
    kafka: KafkaBroker, activemq: ActiveMqBroker, tmp_path: Path
) -> None:
    b = bridge(kafka, activemq, tmp_path, requests_route())
    ids = [f"c-{i}" for i in range(5)]
    request(kafka, b, *ids)
    sent = ingress_task.run(b.path, b.requests_topic, 0, 0, len(ids))
    assert sent.sent == len(ids)
    assert len(pending_entries(kafka, b)) == len(ids)  # durable before the requests could be answered
    answer_requests(activemq, b.service, len(ids), by_message_id=True)
    journal(kafka, b.config, *received_from(activemq, b.reply_queue, len(ids)))
    # The ingress keeps nothing in memory: the egress finds the requests in Kafka, as after a restart.
    journal_topic = b.config.journal_topic
    routed = egress_task.run(b.path, journal_topic, 0, 0, len(ids))
    assert (routed.published, routed.dead_lettered) == (len(ids), 0)
    again = egress_task.run(b.path, journal_topic, 0, 0, len(ids))  # the range again, as after a crash
    assert again.published == len(ids)  # atLeastOnce: the requests are still found
    assert len(pending_entries(kafka, b)) == len(ids)
    egress_task.run(b.path, journal_topic, 0, len(ids), len(ids))  # a later range: the first is committed
    assert pending_entries(kafka, b) == {}  # answered: tombstoned
    answers = read_topics(kafka, [b.replies_topic], 2 * len(ids), settle=0.5)
    assert sorted((r.key, r.value, r.header("jms.JMSCorrelationID")) for r in answers) == [
        (cid.encode(), f"re: q-{cid}".encode(), cid.encode()) for cid in ids for _ in range(2)
    ]


def test_exactly_once_writes_each_answer_and_its_tombstone_once(
    kafka: KafkaBroker, activemq: ActiveMqBroker, tmp_path: Path
) -> None:
    b = bridge(kafka, activemq, tmp_path, requests_route(), delivery="exactlyOnce")
    request(kafka, b, "e-1", "e-2")
    ingress_task.run(b.path, b.requests_topic, 0, 0, 2)
    answer_requests(activemq, b.service, 2, by_message_id=True)
    journal(kafka, b.config, *received_from(activemq, b.reply_queue, 2))
    assert egress_task.run(b.path, b.config.journal_topic, 0, 0, 2).published == 2
    # The tombstones were in the answers' transaction. Kafka acknowledges a commit before it has written
    # the commit markers into the partitions: a reader sees them once the last stable offset passes them.
    eventually(lambda: pending_entries(kafka, b) == {}, 30, "the tombstones, read as a new process would")
    assert egress_task.run(b.path, b.config.journal_topic, 0, 0, 2).replayed  # written: not routed again
    answers = read_topics(kafka, [b.replies_topic], 2, settle=1.0)
    assert sorted(r.key or b"" for r in answers) == [b"e-1", b"e-2"]


def test_late_and_unknown_answers_are_soft_failures_and_leave_nothing_pending(
    kafka: KafkaBroker, activemq: ActiveMqBroker, tmp_path: Path
) -> None:
    b = bridge(kafka, activemq, tmp_path, requests_route(timeoutSeconds=1))
    request(kafka, b, "late")
    ingress_task.run(b.path, b.requests_topic, 0, 0, 1)
    answer_requests(activemq, b.service, 1, by_message_id=True)
    (late,) = received_from(activemq, b.reply_queue, 1)
    after_deadline = int(time.time() * 1000) + 60_000  # the journal took it long after the 1 s timeout
    journal(kafka, b.config, late, timestamp_ms=after_deadline)
    stray = JmsMessage(
        Destination(DestinationKind.QUEUE, b.reply_queue),
        body="?",
        message_id="ID:x",
        correlation_id="ID:nobody",
    )
    journal(kafka, b.config, stray)
    routed = egress_task.run(b.path, b.config.journal_topic, 0, 0, 2)
    assert (routed.published, routed.dead_lettered) == (0, 2)  # counted
    letters = read_topics(kafka, [b.dlq], 2, settle=0.5)
    assert sorted(r.header("jmsbridge.deadletter.reason") or b"" for r in letters) == [
        b"ReplyExpired",
        b"UnknownRequest",
    ]
    egress_task.run(b.path, b.config.journal_topic, 0, 2, 2)  # a later range: the first is committed
    assert pending_entries(kafka, b) == {}  # the expired request is tombstoned too


def test_a_jms_requester_gets_its_message_id_back_from_a_kafka_service(
    kafka: KafkaBroker, activemq: ActiveMqBroker, tmp_path: Path
) -> None:
    def requests(named: dict[str, str]) -> dict[str, Any]:
        match = {"address": named["service"]}
        return route_document("requests", named["bridge"], named["requests_topic"], match=match)

    def replies(named: dict[str, str]) -> dict[str, Any]:
        reply_to = {"fromHeader": "jms.JMSReplyTo", "allowed": "queue://ID:.*"}
        return to_jms_route(
            "replies", named["bridge"], named["replies_topic"], reply_to, send={"correlation": "messageId"}
        )

    b = bridge(kafka, activemq, tmp_path, requests, replies, sources=("reply_queue", "service"))
    requester = JmsRequester(activemq, b.service)
    try:
        message_id = requester.request("price?", "its-own-correlation-id")
        journal(kafka, b.config, *received_from(activemq, b.service, 1))
        assert egress_task.run(b.path, b.config.journal_topic, 0, 0, 1).published == 1
        (asked,) = read_topics(kafka, [b.requests_topic], 1)
        # a Kafka service that copies the jms.* headers it got and knows nothing of conventions
        headers: list[tuple[str, str | bytes | None]] = [
            (k, v) for k, v in asked.headers if k.startswith("jms.")
        ]
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        producer.produce(b.replies_topic, b"42", headers=headers)
        assert producer.flush(30) == 0
        assert ingress_task.run(b.path, b.replies_topic, 0, 0, 1).sent == 1
        assert requester.reply(30_000) == (message_id, "42")
    finally:
        requester.close()


ANSWERED = 100_000


@pytest.mark.slow
def test_a_hundred_thousand_answered_requests_leave_no_state(
    kafka: KafkaBroker, activemq: ActiveMqBroker, tmp_path: Path
) -> None:
    """The pending entries as the ingress writes them and the answers as the journal holds them, without
    JMS in between (the other tests cover that): every answer routed, nothing pending after."""
    b = bridge(kafka, activemq, tmp_path, requests_route(), delivery="exactlyOnce")
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 50})
    deadline = int(time.time() * 1000) + 600_000
    for i in range(ANSWERED):
        entry = pending_record(f"ID:r-{i}", PendingRequest(b.replies_topic, f"c-{i}", deadline, "requests"))
        producer.produce(b.config.pending_topic, entry.value, entry.key)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    queue = Destination(DestinationKind.QUEUE, b.reply_queue)
    answers = (
        JmsMessage(queue, body="a", message_id=f"ID:a-{i}", correlation_id=f"ID:r-{i}")
        for i in range(ANSWERED)
    )
    journal(kafka, b.config, *answers)
    routed = egress_task.run(b.path, b.config.journal_topic, 0, 0, ANSWERED)
    assert (routed.published, routed.dead_lettered) == (ANSWERED, 0)
    assert pending_entries(kafka, b) == {}
    assert egress_pending.pending_table(b.config).snapshot() == {}  # the egress process's copy too


def test_the_job_creates_the_pending_topic_compacted_when_asked(
    kafka: KafkaBroker, activemq: ActiveMqBroker, tmp_path: Path
) -> None:
    b = bridge(kafka, activemq, tmp_path, requests_route())
    kafka.delete_topics(b.config.pending_topic)
    ensure_pending_topic(b.config)  # bridge_document sets createJournalTopic
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, b.config.pending_topic)
    entries = admin.describe_configs([resource], request_timeout=10)[resource].result(timeout=30)
    assert entries["cleanup.policy"].value == "compact"
    spec = b.config.bridge
    kafka_spec = spec.kafka.model_copy(update={"create_journal_topic": False})
    without = b.config.model_copy(update={"bridge": spec.model_copy(update={"kafka": kafka_spec})})
    kafka.delete_topics(b.config.pending_topic)
    with pytest.raises(BridgeStopped, match=r"pending-request topic .* does not exist"):
        ensure_pending_topic(without)
