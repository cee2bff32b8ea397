"""A caught-up task waits on the broker (kafka/following.py `wait_for_more`): a record produced while it
waits is moved, and idle it asks for the partition's end about twice a second, not ten times."""

from __future__ import annotations

import threading
import time
import uuid

from confluent_kafka import Producer

from bridge_job.kafka.following import WAIT_SECONDS, Followed, follow
from bridge_job.kafka.reading import consumer_settings
from jmsbridge.local import wait_until
from testbed.brokers import KafkaBroker
from testbed.builders import config


def test_a_caught_up_follower_waits_on_the_broker_and_moves_what_comes(kafka: KafkaBroker) -> None:
    topic = f"followed-{uuid.uuid4().hex[:8]}"
    kafka.create_topics(topic)
    job = config(bootstrap=kafka.bootstrap)
    settings = consumer_settings(job.bridge.kafka, f"following-{uuid.uuid4().hex[:8]}")
    moved: list[tuple[int, int]] = []
    asked: list[float] = []  # when the follower went round its loop: once per request for the end
    stop = threading.Event()
    followed: list[Followed] = []

    def move(begin: int, end: int) -> int:
        moved.append((begin, end))
        return end

    def done() -> bool:
        asked.append(time.monotonic())
        return stop.is_set()

    def run() -> None:
        followed.append(follow(settings, topic, 0, 0, 120, lambda: job, move, None, done=done))

    follower = threading.Thread(target=run, daemon=True)
    follower.start()
    try:
        wait_until(lambda: len(asked) >= 4, 30, "the follower idle for three rounds")
        # Three rounds past the first, each a wait on the broker (before: 2 to 100 ms pauses).
        assert asked[3] - asked[0] >= 3 * WAIT_SECONDS * 0.9, asked[:4]
        assert moved == []

        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        producer.produce(topic, b"one")
        assert producer.flush(10) == 0
        wait_until(lambda: moved == [(0, 1)], 30, "the record moved")
    finally:
        stop.set()
        follower.join(timeout=30)
    assert not follower.is_alive()
    assert followed == [Followed(began=0, reached=1)]


def test_a_follower_beyond_the_partitions_end_waits_without_a_loop_of_requests(kafka: KafkaBroker) -> None:
    """Its waiting consumer is refused at once (the offset is out of range): it still waits between two
    requests for the partition's end."""
    topic = f"followed-{uuid.uuid4().hex[:8]}"
    kafka.create_topics(topic)
    job = config(bootstrap=kafka.bootstrap)
    settings = consumer_settings(job.bridge.kafka, f"following-{uuid.uuid4().hex[:8]}")
    asked: list[float] = []

    def done() -> bool:
        asked.append(time.monotonic())
        return len(asked) > 3

    followed = follow(settings, topic, 0, 5, 60, lambda: job, lambda begin, end: end, None, done=done)
    assert followed == Followed(began=5, reached=5)
    assert asked[3] - asked[0] >= 3 * WAIT_SECONDS * 0.9, asked
