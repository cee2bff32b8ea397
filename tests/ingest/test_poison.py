"""Poison messages at ingest never stop the bridge unless its policy says so: the real ingest in-process,
on real ActiveMQ and Apache Kafka, with messages a JMS producer really sends.

Each test sends good messages around poison ones and checks what a user observes: the journal (what the
egress will route), the dead-letter topic, the queue (nothing left behind after a commit; the poison one
still there under `fail`) and the stop message.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from bridge_job.config import JmsBridge, JmsSource, JobConfig, job_config
from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats.journal import EPOCH_HEADER, Epoch
from bridge_job.ingest.journalling import Ingest
from bridge_job.jms import JmsConnection, start_jvm
from bridge_job.journal.topic import ensure_journal_topic
from bridge_job.supervision.telemetry import Metrics
from testbed.brokers import ActiveMqBroker, KafkaBroker, activemq_classpath, wait_until
from testbed.harness import Received, bridge_document, read_topics
from testbed.jms import factory_spec, receive, send_built
from tests.support.poison_messages import LARGE_BODY_CHARS, POISON, good


@pytest.fixture(scope="module", autouse=True)
def jvm() -> None:
    start_jvm(activemq_classpath())


def poison_config(activemq: ActiveMqBroker, kafka: KafkaBroker, policy: str) -> tuple[JobConfig, str, str]:
    """A bridge on a new queue with the given onSoftFailure; (config, queue, dead-letter topic)."""
    n = uuid.uuid4().hex[:8]
    queue, dead_letters = f"poison.{n}", f"dlq-{n}"
    kafka.create_topics(dead_letters)
    routing = {"onSoftFailure": policy, "deadLetterTopic": dead_letters}
    document = bridge_document(f"poison-{n}", activemq, kafka, [{"queue": queue}], routing=routing)
    return job_config(JmsBridge.model_validate(document), []), queue, dead_letters


def start(config: JobConfig, running: list[Ingest], metrics: Metrics | None = None) -> Ingest:
    on_batch = metrics.record_ingest if metrics is not None else lambda batch: None
    ingest = Ingest(config, ensure_journal_topic(config), on_batch)
    running.append(ingest)
    return ingest.start(Epoch("test/pod", "test"))


def journal_messages(kafka: KafkaBroker, config: JobConfig, count: int) -> list[Received]:
    """The `count` messages in the (one-partition) journal, after the ingest's epoch marker."""
    records = read_topics(kafka, [config.journal_topic], count + 1, settle=1.0)
    assert records[0].header(EPOCH_HEADER) == b"test/pod", "the ingest writes its epoch marker first"
    return records[1:]


def left_on(activemq: ActiveMqBroker, queue: str, count: int) -> list[Any]:
    """Exactly `count` messages still on `queue` (taken off it), and no more within a second."""
    with (
        JmsConnection(factory_spec(activemq.url)) as connection,
        connection.consumer(JmsSource(queue=queue)) as c,
    ):
        messages = receive(c, count) if count else []
        assert c.receive_batch(1, 1000) == [], "more messages left on the queue than expected"
        c.commit()
    return messages


def test_poison_is_dead_lettered_with_what_can_be_kept(
    activemq: ActiveMqBroker, kafka: KafkaBroker, running: list[Ingest]
) -> None:
    config, queue, dead_letters = poison_config(activemq, kafka, "deadLetter")
    builders = [good(0)]
    for build, _ in POISON.values():
        builders.append(build)
        builders.append(good(len(builders)))
    ids = send_built(activemq.url, queue, builders)
    metrics = Metrics(config.bridge_id)
    ingest = start(config, running, metrics)

    journal = journal_messages(kafka, config, len(POISON) + 1)
    letters = read_topics(kafka, [dead_letters], len(POISON), settle=1.0)
    assert ingest.failure is None
    goods = range(0, 2 * len(POISON) + 1, 2)  # every other message
    assert sorted(int(r.header("jms.seq") or b"") for r in journal) == list(goods)
    reasons = {
        (r.key or b"").decode(): (r.header("jmsbridge.deadletter.reason") or b"").decode() for r in letters
    }
    poison_at = range(1, 2 * len(POISON), 2)
    assert reasons == {ids[i]: reason for i, (_, reason) in zip(poison_at, POISON.values(), strict=True)}
    by_reason = {r.header("jmsbridge.deadletter.reason"): r for r in letters}
    large = by_reason[b"MessageTooLarge"]
    assert (
        large.value is None
        and large.header("jmsbridge.deadletter.bodySize") == str(LARGE_BODY_CHARS).encode()
    )
    assert b"journal topic" in (large.header("jmsbridge.deadletter.error") or b"")
    invalid_type = next(r for r in letters if r.key == ids[3].encode())
    assert invalid_type.value == b"a fine body"  # only the header was invalid: the body is kept
    assert invalid_type.header("jms.JMSType") == "type \ufffd".encode()
    unmappable = by_reason[b"UnmappableProperty"]
    assert unmappable.header("jms.a,b") == b"1" and unmappable.value == b"a fine body"
    unreadable = by_reason[b"UnreadableMessage"]  # what could be read: headers and properties, no body
    assert unreadable.value is None and unreadable.header("jms.seq") == b"-1"
    assert unreadable.header("jms.JMSRedelivered") == b"true"  # rolled back once: read twice, then poison
    assert unreadable.header("jmsbridge.deadletter.error") == (
        b"the JMS client cannot read its TextMessage body: UTFDataFormatException"
    )
    assert all(r.header("jmsbridge.deadletter.source") == f"queue://{queue}".encode() for r in letters)
    ingest.stop()
    left_on(activemq, queue, 0)  # every batch committed: nothing waits behind the poison
    # What the job's metrics say: counted once committed, poison apart from the journalled messages.
    value = metrics.registry.get_sample_value
    bridge = {"bridge": config.bridge_id}
    assert value("jmsbridge_ingested_messages_total", bridge) == len(POISON) + 1
    poison = value("jmsbridge_ingest_poison_messages_total", bridge | {"outcome": "deadLettered"})
    assert poison == len(POISON)
    assert value("jmsbridge_ingest_latency_seconds_count", bridge) == 2 * len(POISON) + 1


def test_skip_drops_poison_and_carries_on(
    activemq: ActiveMqBroker, kafka: KafkaBroker, running: list[Ingest]
) -> None:
    config, queue, dead_letters = poison_config(activemq, kafka, "skip")
    lone_body, _ = POISON["lone surrogate in the body"]
    send_built(activemq.url, queue, [lone_body, good(1)])
    start(config, running)
    journal = journal_messages(kafka, config, 1)
    assert [r.value for r in journal] == [b"good 1"]
    assert read_topics(kafka, [dead_letters], 0, settle=0.5) == []


def test_fail_stops_naming_the_message_and_leaves_it_on_the_queue(
    activemq: ActiveMqBroker, kafka: KafkaBroker, running: list[Ingest]
) -> None:
    config, queue, _ = poison_config(activemq, kafka, "fail")
    too_large, _ = POISON["5 MB text"]
    (poison_id, _) = send_built(activemq.url, queue, [too_large, good(1)])
    ingest = start(config, running)
    wait_until(lambda: ingest.failure is not None, 60, "the ingest to stop")
    assert isinstance(ingest.failure, BridgeStopped)
    assert ingest.failure.reason.startswith(f"message {poison_id} from queue://{queue}: MessageTooLarge: ")
    assert "raise the limits (topic " in ingest.failure.reason
    assert "message.max.bytes=1000000" in ingest.failure.reason
    assert ingest.failure.reason.endswith("or set routing.onSoftFailure to skip or deadLetter")
    ingest.stop()
    left = left_on(activemq, queue, 2)  # rolled back: the broker still has both
    assert len(left[0].body) == LARGE_BODY_CHARS
