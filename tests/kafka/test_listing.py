"""`TopicAdmin.listing` asks in doubling slices, so that a refused login ends the asking at once.

The admin client is a stand-in that records the timeouts it is asked with and raises what confluent-kafka
raises, so that each path is taken deterministically; the job's stop on a real broker's refusal is
tests/kafka/test_startup.py's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from bridge_job.kafka import refusals
from bridge_job.kafka.topics import TopicAdmin
from testbed.builders import bridge

TIMED_OUT = KafkaException(
    KafkaError(KafkaError._TRANSPORT, "Failed to get metadata: Local: Broker transport failure")
)
REFUSED = KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: Authentication failed")


class Admin:
    """Answers `answer` at the `answer_at`-th request (1-based) and times out before; `refuse_at`: the
    request during which the broker refuses the login (an error event, delivered by `poll`)."""

    def __init__(self, answer_at: int = 0, refuse_at: int = 0) -> None:
        self.asked: list[float] = []
        self.answer_at, self.refuse_at = answer_at, refuse_at
        self.events: list[KafkaError] = []

    def list_topics(self, timeout: float) -> str:
        self.asked.append(timeout)
        if len(self.asked) == self.refuse_at:
            self.events.append(REFUSED)
        if len(self.asked) == self.answer_at:
            return "metadata"
        raise TIMED_OUT

    def poll(self, timeout: float) -> None:
        for event in self.events:
            refusals.note(event)
        self.events.clear()


@pytest.fixture(autouse=True)
def no_refusal_heard() -> Iterator[None]:
    refusals._seen.clear()
    yield
    refusals._seen.clear()


def admin_with(fake: Admin) -> TopicAdmin:
    admin = TopicAdmin(bridge().spec.kafka)
    admin._admin = fake  # type: ignore[assignment]
    return admin


def test_a_refusal_heard_after_a_slice_ends_the_asking() -> None:
    fake = Admin(refuse_at=1)
    with pytest.raises(KafkaException):
        admin_with(fake).listing(5.0, again=True)
    assert fake.asked == [0.5]
    assert refusals.seen() is not None  # what kafka.waiting stops the bridge on


def test_without_a_refusal_the_slices_double_and_the_last_takes_what_is_left() -> None:
    fake = Admin()
    with pytest.raises(KafkaException):
        admin_with(fake).listing(5.0, again=True)
    assert fake.asked[:3] == [0.5, 1.0, 2.0]
    assert len(fake.asked) == 4 and 4.9 < fake.asked[3] <= 5.0  # this stand-in answers at once


def test_an_answer_in_a_later_slice_is_the_listing() -> None:
    fake: Any = Admin(answer_at=2)
    admin = admin_with(fake)
    assert admin.listing(5.0, again=True) == "metadata"
    assert admin.listing() == "metadata" and fake.asked == [0.5, 1.0]  # kept until asked again
