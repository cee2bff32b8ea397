"""Transacted batches: commit acknowledges, rollback redelivers, topics use durable subscriptions."""

from __future__ import annotations

import time

import pytest

from bridge_job.config import JmsSource, JmsSpec
from bridge_job.jms import JmsConnection, JmsError
from bridge_job.message import Destination, DestinationKind, JmsMessage, Property, PropertyType
from testbed.jms import receive


def send_texts(connection: JmsConnection, destination: Destination, *bodies: str, **props: str) -> list[str]:
    properties = {k: Property.string(v) for k, v in props.items()}
    with connection.producer() as producer:
        return [producer.send(JmsMessage(destination, body=b, properties=properties)) for b in bodies]


def queue_of(source: JmsSource) -> Destination:
    assert source.queue is not None
    return Destination(DestinationKind.QUEUE, source.queue)


def test_rollback_redelivers_and_commit_removes(connection: JmsConnection, queue: JmsSource) -> None:
    ids = send_texts(connection, queue_of(queue), "a", "b", "c")
    with connection.consumer(queue) as consumer:
        first = receive(consumer, 3)
        assert [m.message_id for m in first] == ids
        assert not any(m.redelivered for m in first)
        consumer.rollback()

        again = receive(consumer, 3)
        assert [m.message_id for m in again] == ids
        assert all(m.redelivered for m in again)
        # The provider's JMSX properties are kept (ActiveMQ reports the count from the first redelivery).
        assert all(m.properties["JMSXDeliveryCount"] == Property(PropertyType.INT, 2) for m in again)
        consumer.commit()
        assert consumer.receive_batch(10, 200) == []

    with connection.consumer(queue) as consumer:
        assert consumer.receive_batch(10, 300) == []


def test_closing_without_commit_redelivers(connection: JmsConnection, queue: JmsSource) -> None:
    (sent,) = send_texts(connection, queue_of(queue), "once")
    with connection.consumer(queue) as consumer:
        assert [m.message_id for m in receive(consumer, 1)] == [sent]
    with connection.consumer(queue) as consumer:
        (again,) = receive(consumer, 1)
        consumer.commit()
    assert again.message_id == sent
    assert again.redelivered


def test_batch_size_is_bounded_by_max_messages(connection: JmsConnection, queue: JmsSource) -> None:
    send_texts(connection, queue_of(queue), *[str(i) for i in range(7)])
    with connection.consumer(queue) as consumer:
        batch = consumer.receive_batch(3, 10_000, linger=True)
        assert [m.body for m in batch] == ["0", "1", "2"]
        rest = receive(consumer, 4)
        assert [m.body for m in rest] == ["3", "4", "5", "6"]
        assert consumer.receive_batch(100, 100) == []
        consumer.commit()


def test_batch_waits_at_most_max_delay(connection: JmsConnection, queue: JmsSource) -> None:
    with connection.consumer(queue) as consumer:
        started = time.monotonic()
        assert consumer.receive_batch(10, 300) == []
        waited = time.monotonic() - started
        assert 0.25 <= waited < 2.0

        started = time.monotonic()
        assert consumer.receive_batch(10, 0) == []
        assert time.monotonic() - started < 1.0

        # Fewer messages than asked for, lingering: the batch takes what comes and ends when max_delay_ms
        # is over.
        send_texts(connection, queue_of(queue), "x", "y")
        started = time.monotonic()
        batch = consumer.receive_batch(100, 1000, linger=True)
        waited = time.monotonic() - started
        assert 1 <= len(batch) <= 2
        assert 0.9 <= waited < 3.0
        batch += receive(consumer, 2 - len(batch))
        assert [m.body for m in batch] == ["x", "y"]
        consumer.commit()


def test_a_batch_closes_when_nothing_more_is_waiting(connection: JmsConnection, queue: JmsSource) -> None:
    """The ingest's batches (no linger): the messages there are taken, and the batch ends as soon as no
    other is waiting, however long `max_delay_ms` would allow (at a trickle, no message waits for others)."""
    with connection.consumer(queue) as consumer:
        assert consumer.receive_batch(1, 100) == []  # the consumer is up: what is sent now reaches it
        send_texts(connection, queue_of(queue), "a", "b", "c")
        batch = receive(consumer, 1)  # the first may come alone, before the others reached the client
        started = time.monotonic()
        while len(batch) < 3:
            batch += consumer.receive_batch(100, 60_000)
        assert time.monotonic() - started < 30  # the last batch closed with nothing waiting, not at 60 s
        assert [m.body for m in batch] == ["a", "b", "c"]
        started = time.monotonic()
        assert consumer.receive_batch(100, 300) == []  # nothing: it waited for a first message
        assert time.monotonic() - started >= 0.25
        consumer.commit()


def test_selector_is_honoured(connection: JmsConnection, unique: str) -> None:
    source = JmsSource(queue=f"test.jms.{unique}", selector="color = 'red'")
    send_texts(connection, queue_of(source), "blue", color="blue")
    send_texts(connection, queue_of(source), "red", color="red")
    with connection.consumer(source) as consumer:
        (got,) = receive(consumer, 1)
        assert got.body == "red"
        assert consumer.receive_batch(10, 300) == []
        consumer.commit()


def test_invalid_selector_is_a_jms_error(connection: JmsConnection, unique: str) -> None:
    source = JmsSource(queue=f"test.jms.{unique}", selector="color = ")
    with pytest.raises(
        JmsError, match=rf"cannot consume from queue://test\.jms\.{unique} with selector 'color = ': .+"
    ):
        connection.consumer(source)


def test_durable_subscription_keeps_messages_while_closed(spec: JmsSpec, unique: str) -> None:
    source = JmsSource(topic=f"test.topic.{unique}", durable_subscription="bridge")
    topic = Destination(DestinationKind.TOPIC, f"test.topic.{unique}")
    client_id = f"durable-{unique}"
    with JmsConnection(spec, client_id=client_id) as connection:
        connection.consumer(source).close()  # subscribe, then go away

    with JmsConnection(spec, client_id=f"publisher-{unique}") as publisher:
        ids = send_texts(publisher, topic, "while", "away")

    with JmsConnection(spec, client_id=client_id) as connection, connection.consumer(source) as consumer:
        got = receive(consumer, 2)
        consumer.commit()
    assert [m.message_id for m in got] == ids
    assert all(m.destination == topic for m in got)


def test_topic_without_client_id_is_refused(spec: JmsSpec, unique: str) -> None:
    source = JmsSource(topic=f"test.topic.{unique}", durable_subscription="bridge")
    with JmsConnection(spec) as connection, pytest.raises(JmsError, match="needs the connection's client id"):
        connection.consumer(source)


def test_closed_consumer_is_a_jms_error(connection: JmsConnection, queue: JmsSource) -> None:
    consumer = connection.consumer(queue)
    consumer.close()
    with pytest.raises(JmsError, match="closed"):
        consumer.receive_batch(1, 10)
    connection.close()
    with pytest.raises(JmsError, match="is closed"):
        connection.consumer(queue)
