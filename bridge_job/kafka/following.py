"""Following one partition for a while: what a real-time task of either direction does (spark/intervals.py).

Begin where the task's consumer group committed (unless Spark planned further), then until the time is
up: ask the partition's end, hand what is there to `move` as one range, and commit the group's offset
past it when the range's progress is not committed with its records already. Records that left the
partition before they were moved end the interval instead: the next planning applies `spark.onDataLoss`.
A caught-up follower waits a few milliseconds before asking again (`Idle`). Kafka not answering is
waited out for the bridge's patience, as everywhere (kafka/waiting.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from bridge_job.config import JobConfig
from bridge_job.kafka.group_offsets import commit_offsets
from bridge_job.kafka.waiting import patiently

# A caught-up task asks Kafka for the partition's end this often: it starts at IDLE_FIRST_SECONDS after
# records and doubles up to IDLE_MAX_SECONDS. A consumer left assigned would keep a fetch open against a
# broker that answers empty fetches at once (some Kafka-protocol brokers do); a watermark request every
# 100 ms costs about nothing, against any Kafka (bench/idle.py).
IDLE_FIRST_SECONDS = 0.002
IDLE_MAX_SECONDS = 0.1


def begin_at(start: int, committed: int, high: int) -> int:
    """Where a task begins: what its group committed, unless Spark planned further; a committed offset
    beyond the partition's end belongs to another topic of that name (the job's start refuses it)."""
    return max(start, committed) if committed <= high else start


class Idle:
    """A caught-up task's waits: short right after records, longer the longer nothing comes."""

    def __init__(self, sleep: Callable[[float], None] = time.sleep) -> None:
        self._sleep = sleep
        self._next = IDLE_FIRST_SECONDS

    def busy(self) -> None:
        self._next = IDLE_FIRST_SECONDS

    def wait(self, deadline: float) -> None:
        """Wait before asking again, never past `deadline` (time.monotonic)."""
        self._sleep(max(min(self._next, deadline - time.monotonic()), 0.0))
        self._next = min(self._next * 2, IDLE_MAX_SECONDS)


@dataclass(frozen=True)
class Followed:
    began: int  # the first offset of the interval
    reached: int  # the offset after the last one moved


def follow(
    consumer: Consumer,
    topic: str,
    partition: int,
    start: int,
    seconds: float,
    current: Callable[[], JobConfig],
    move: Callable[[int, int], int],
    group: str | None,
    done: Callable[[], bool] = lambda: False,
) -> Followed:
    """Move `topic`/`partition`'s records as they come for `seconds`, until `done()`: ranges of at most
    `spark.maxRecordsPerBatch` of the config as it is `current()`ly, Kafka waited out for its patience.
    `move(start, end)` says where the partition stands after it: `end`, unless another writer took the
    partition over (then where that one got to). `group` is committed past each range (None: the range's
    progress is committed with its records)."""
    deadline = time.monotonic() + seconds
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
    idle = Idle()
    while time.monotonic() < deadline and not done():
        low, high = ends()
        if position < low:
            break  # records gone before they were moved: the next planning stops or counts (onDataLoss)
        if high <= position:
            idle.wait(deadline)
            continue
        idle.busy()
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
