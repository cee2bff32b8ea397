"""The real-time mode's bookkeeping: which mode a query runs, which offsets keys are partitions, where a
task begins, and how a caught-up task waits (spark/intervals.py, kafka/following.py)."""

from __future__ import annotations

from bridge_job.kafka.following import begin_at
from bridge_job.spark import intervals
from bridge_job.spark.intervals import (
    INTERVAL_KEY,
    is_partition_key,
    next_interval,
    query_mode,
)
from testbed.builders import config


def test_real_time_is_the_default_and_available_now_drains_in_micro_batches() -> None:
    assert query_mode(config(), available_now=False) == intervals.REAL_TIME
    assert query_mode(config(), available_now=True) == intervals.MICRO_BATCH
    assert query_mode(config(spark={"mode": "microBatch"}), available_now=False) == intervals.MICRO_BATCH


def test_the_interval_count_and_topic_patterns_are_no_partitions() -> None:
    assert [k for k in ["0", "orders:3", INTERVAL_KEY, "/orders.*"] if is_partition_key(k)] == [
        "0",
        "orders:3",
    ]
    assert next_interval({"0": 5}) == {INTERVAL_KEY: 1}
    assert next_interval({"0": 5, INTERVAL_KEY: 7}) == {INTERVAL_KEY: 8}


def test_a_task_begins_at_what_was_committed_unless_it_belongs_to_another_topic() -> None:
    assert begin_at(start=10, committed=-1001, high=20) == 10  # nothing committed
    assert begin_at(start=10, committed=15, high=20) == 15
    assert begin_at(start=10, committed=5, high=20) == 10
    assert begin_at(start=10, committed=25, high=20) == 10  # beyond the end: not this topic's
