"""Committing a group's offsets within a timeout (kafka/group_offsets.py), on Apache Kafka: what a consumer
of the group reads back, and a Kafka that does not answer (frozen) failing the commit instead of holding it
for ever, as a consumer's synchronous commit does."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from bridge_job.config import KafkaSpec
from bridge_job.kafka.group_offsets import commit_offsets
from bridge_job.kafka.waiting import patiently
from testbed.brokers import KafkaBroker
from testbed.builders import bridge


def committed(kafka: KafkaBroker, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group})
    try:
        return int(consumer.committed([TopicPartition(topic, 0)], timeout=30)[0].offset)
    finally:
        consumer.close()


def test_the_group_reads_back_what_was_committed(kafka: KafkaBroker) -> None:
    topic, group = f"offsets-{uuid.uuid4().hex[:8]}", f"group-{uuid.uuid4().hex[:8]}"
    kafka.create_topics(topic)
    spec = bridge(bootstrap=kafka.bootstrap).spec.kafka
    commit = patiently_committing(spec, topic, group)  # a fresh broker's coordinator may still be loading
    commit(7)
    assert committed(kafka, group, topic) == 7
    commit(9)
    assert committed(kafka, group, topic) == 9


@pytest.mark.slow  # a broker of its own, frozen, then restarted (20 s)
def test_a_commit_fails_within_its_timeout_while_kafka_is_away_and_goes_through_once_it_is_back(
    own_kafka: KafkaBroker,
) -> None:
    """Frozen: the commit fails after the 3 s asked, where a consumer's synchronous commit waits for as long
    as the broker is frozen. Restarted (every broker down at once): librdkafka's default re-bootstrap left
    every later request to the group's coordinator unanswered, and this commit timed out for minutes."""
    own_kafka.create_topics("moved")
    spec = bridge(bootstrap=own_kafka.bootstrap).spec.kafka
    commit = patiently_committing(spec, "moved")
    commit(1)  # a new broker's group coordinator may still be loading
    outcome: list[BaseException | None] = []

    def commit_frozen() -> None:
        try:
            commit_offsets(spec, "g", [TopicPartition("moved", 0, 2)], timeout=3)
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)

    own_kafka.freeze()
    try:
        caller = threading.Thread(target=commit_frozen, daemon=True)
        caller.start()
        caller.join(120)  # far past the 3 s asked: a commit still waiting here waits for ever
        assert outcome, "the commit still waits on a Kafka that does not answer"
        assert isinstance(outcome[0], KafkaException), outcome
    finally:
        own_kafka.thaw()

    own_kafka.stop()
    own_kafka.start()
    commit(3)
    assert committed(own_kafka, "g", "moved") == 3


def patiently_committing(spec: KafkaSpec, topic: str, group: str = "g") -> Callable[[int], None]:
    """Commit `group` on `topic` at an offset, asked again for up to 60 s as the tasks ask."""

    def commit(offset: int) -> None:
        offsets = [TopicPartition(topic, 0, offset)]
        patiently(
            lambda t: commit_offsets(spec, group, offsets, min(t, 10)), spec, 60, f"committing {offset}"
        )

    return commit
