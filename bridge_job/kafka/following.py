"""Following one partition for a while: what a real-time task of either direction does (spark/intervals.py).

Begin where the task's consumer group committed (unless Spark planned further), then until the time is
up: ask the partition's end, hand what is there to `move` as one range, and commit the group's offset
past it when the range's progress is not committed with its records already. Records that left the
partition before they were moved end the interval instead: the next planning applies `spark.onDataLoss`.
A caught-up follower waits on the broker for the partition's next record (`wait_for_more`). Kafka not
answering is waited out for the bridge's patience, as everywhere (kafka/waiting.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from bridge_job.config import JobConfig
from bridge_job.kafka.group_offsets import commit_offsets
from bridge_job.kafka.reading import Settings, consumer_for
from bridge_job.kafka.waiting import patiently

# A caught-up task waits on the broker: a consumer of its own (`waiting_settings`), assigned where the task
# got to, whose fetch the broker holds until a committed record comes or WAIT_SECONDS pass (Kafka's
# `fetch.wait.max.ms`). A record is moved within a round trip of its commit, where asking for the
# partition's end after a pause of up to 100 ms (the follower before) let it wait for that pause; idle,
# a task asks twice a second. The task's own consumer fetches briefly (kafka/reading.py) and so cannot
# hold such a fetch; the waiter is another client, with a connection of its own.
WAIT_SECONDS = 0.5


def waiting_settings(settings: Settings) -> dict[str, str | int | float | bool]:
    """The settings of the waiting consumer of the task whose consumer has `settings`. What it fetches is
    thrown away: the task reads the range with its own consumer. (A smaller prefetch queue,
    `queued.min.messages` 1, made the client put off its next fetch by `fetch.queue.backoff.ms`, a second,
    once a record was queued.)"""
    return dict(settings) | {"fetch.wait.max.ms": int(WAIT_SECONDS * 1000)}


def begin_at(start: int, committed: int, high: int) -> int:
    """Where a task begins: what its group committed, unless Spark planned further; a committed offset
    beyond the partition's end belongs to another topic of that name (the job's start refuses it)."""
    return max(start, committed) if committed <= high else start


def wait_for_more(waiter: Consumer, topic: str, partition: int, position: int, deadline: float) -> None:
    """Until `waiter` has a committed record of `topic`/`partition` at `position` or after, WAIT_SECONDS
    passed, or `deadline` (time.monotonic) came. What it fetched is left to the caller's next read."""
    until = min(time.monotonic() + WAIT_SECONDS, deadline)
    waiter.assign([TopicPartition(topic, partition, position)])
    try:
        came = waiter.consume(num_messages=1, timeout=max(until - time.monotonic(), 0.0))
        if came and came[0].error() is None:
            return
    except KafkaException:
        pass
    finally:
        waiter.unassign()
    # An error (the position beyond the partition's end, Kafka away): the task's next request says what
    # is wrong and waits it out; until then no loop of requests.
    time.sleep(max(until - time.monotonic(), 0.0))


@dataclass(frozen=True)
class Followed:
    began: int  # the first offset of the interval
    reached: int  # the offset after the last one moved


def follow(
    settings: Settings,
    topic: str,
    partition: int,
    start: int,
    seconds: float,
    current: Callable[[], JobConfig],
    move: Callable[[int, int], int],
    group: str | None,
    done: Callable[[], bool] = lambda: False,
) -> Followed:
    """Move `topic`/`partition`'s records as they come for `seconds`, until `done()`, with this process's
    consumer of `settings` (and its waiting one): ranges of at most
    `spark.maxRecordsPerBatch` of the config as it is `current()`ly, Kafka waited out for its patience.
    `move(start, end)` says where the partition stands after it: `end`, unless another writer took the
    partition over (then where that one got to). `group` is committed past each range (None: the range's
    progress is committed with its records)."""
    deadline = time.monotonic() + seconds
    consumer, waiter = consumer_for(settings), consumer_for(waiting_settings(settings))
    name = f"{topic}/{partition}"
    where = TopicPartition(topic, partition)
    bridge = current().bridge  # Kafka's address and the patience are the job's, fixed when it starts
    kafka, patience = bridge.kafka, bridge.outages.patience_seconds

    def watermarks(timeout: float) -> tuple[int, int]:
        try:
            low, high = consumer.get_watermark_offsets(where, timeout=timeout, cached=False)
        except KafkaException as error:
            if error.args and error.args[0].code() == KafkaError._UNKNOWN_PARTITION:
                # The client's metadata lost the partition while the broker restarted, and it refreshes
                # metadata only every 5 minutes: ask the broker now, so that the next attempt finds it.
                consumer.list_topics(where.topic, timeout=timeout)
            raise
        return int(low), int(high)

    def ends() -> tuple[int, int]:
        return patiently(watermarks, kafka, patience, f"asking for the end of {name}")

    def committed(timeout: float) -> int:
        return int(consumer.committed([where], timeout=timeout)[0].offset)

    done_before = patiently(committed, kafka, patience, f"asking how far {name} was moved")
    position = began = begin_at(start, done_before, ends()[1])
    while time.monotonic() < deadline and not done():
        low, high = ends()
        if position < low:
            break  # records gone before they were moved: the next planning stops or counts (onDataLoss)
        if high <= position:
            wait_for_more(waiter, topic, partition, position, deadline)
            continue
        upto = min(high, position + current().bridge.spark.max_records_per_batch)
        reached = move(position, upto)
        if group is not None:
            progress = [TopicPartition(topic, partition, reached)]

            def commit_progress(
                timeout: float, group: str = group, progress: list[TopicPartition] = progress
            ) -> None:
                commit_offsets(kafka, group, progress, timeout)

            patiently(commit_progress, kafka, patience, f"committing how far {name} was moved")
        position = reached
    return Followed(began, position)
