"""Sending: transacted producers publish on commit only; expiration becomes the remaining time-to-live; a
young producer waits for ActiveMQ's advisories before it takes a temporary queue for a deleted one."""

from __future__ import annotations

from typing import Any

import jpype
import pytest

from bridge_job.config import JmsSource
from bridge_job.jms import JmsConnection, JmsError
from bridge_job.jms.producing import ADVISORY_SECONDS, time_to_live
from bridge_job.message import Destination, DestinationKind, JmsMessage, Property
from testbed.jms import receive


def queue_of(source: JmsSource) -> Destination:
    assert source.queue is not None
    return Destination(DestinationKind.QUEUE, source.queue)


def test_transacted_producer_publishes_on_commit_only(connection: JmsConnection, queue: JmsSource) -> None:
    with connection.producer(transacted=True) as producer, connection.consumer(queue) as consumer:
        producer.send(JmsMessage(queue_of(queue), body="rolled back"))
        producer.rollback()
        committed = producer.send(JmsMessage(queue_of(queue), body="committed"))
        assert consumer.receive_batch(10, 300) == []
        producer.commit()
        (got,) = receive(consumer, 1)
        consumer.commit()
        assert got.message_id == committed
        assert got.body == "committed"
        assert consumer.receive_batch(10, 200) == []


def test_time_to_live_keeps_the_original_deadline() -> None:
    assert time_to_live(0, 1_000) == 0
    assert time_to_live(61_000, 1_000) == 60_000
    assert time_to_live(500, 1_000) == 1  # already expired: let the provider expire it, never keep it


def test_expired_message_is_not_delivered(connection: JmsConnection, queue: JmsSource) -> None:
    with connection.producer() as producer:
        producer.send(JmsMessage(queue_of(queue), body="too late", expiration=1))
        kept = producer.send(JmsMessage(queue_of(queue), body="in time"))
    with connection.consumer(queue) as consumer:
        (got,) = receive(consumer, 1)
        assert got.message_id == kept
        assert consumer.receive_batch(10, 300) == []
        consumer.commit()


def test_provider_rejection_is_a_jms_error(connection: JmsConnection, queue: JmsSource) -> None:
    with connection.producer() as producer:
        with pytest.raises(JmsError, match=rf"cannot send to queue://{queue.queue}: "):
            producer.send(JmsMessage(queue_of(queue), body="x", properties={"": Property.string("x")}))
        with pytest.raises(JmsError, match="cannot commit the sent messages"):
            producer.commit()  # not transacted
    with pytest.raises(JmsError, match="the producer is closed"):
        producer.send(JmsMessage(queue_of(queue), body="x"))


class UnheardFirst:
    """The client's producer as it behaves before the advisories came: `refusals` sends refused the way
    ActiveMQ's client refuses them (the race itself cannot be forced: it is seen once in about ten runs),
    then sent for real."""

    def __init__(self, real: Any, refusals: int) -> None:
        self.real, self.refusals, self.calls = real, refusals, 0

    def send(self, *args: Any) -> None:
        self.calls += 1
        if self.calls <= self.refusals:
            refused = jpype.JClass("javax.jms.InvalidDestinationException")
            raise refused("Cannot publish to a deleted Destination: temp-queue://ID:requester-1:1:1")
        self.real.send(*args)


def test_a_young_producer_waits_for_the_advisories_of_a_temporary_queue(
    connection: JmsConnection, queue: JmsSource
) -> None:
    with connection.producer() as producer:
        stand_in = producer._producer = UnheardFirst(producer._producer, refusals=3)
        sent = producer.send(JmsMessage(queue_of(queue), body="reply"))
        assert stand_in.calls == 4
    with connection.consumer(queue) as consumer:
        (got,) = receive(consumer, 1)
        consumer.commit()
        assert got.message_id == sent


def test_after_the_advisories_time_a_deleted_temporary_queue_is_refused_at_once(
    connection: JmsConnection, queue: JmsSource
) -> None:
    with connection.producer() as producer:
        stand_in = producer._producer = UnheardFirst(producer._producer, refusals=1)
        producer._made -= ADVISORY_SECONDS  # made that long ago
        with pytest.raises(JmsError, match="Cannot publish to a deleted Destination"):
            producer.send(JmsMessage(queue_of(queue), body="reply"))
        assert stand_in.calls == 1
