"""The real-time mode's intervals: which mode a query runs, and the offsets key that counts intervals.

In `spark.mode: realTime` a micro-batch is an *interval*: Spark plans it, checkpoints it and runs one task
per partition, and each task moves records as they arrive for `spark.taskIntervalSeconds`, committing its
progress in Kafka as it goes (kafka/following.py, used by egress/interval.py and
ingress/interval.py). When the tasks return, Spark plans the next interval at once. A batch's
offsets are where each partition stood when the interval was planned (what Kafka says was committed):
the checkpoint still indexes the topics it read (spark/binding.py), and a task begins at the committed
position whatever Spark planned, so nothing depends on Spark's offsets for correctness.

Spark runs a batch only when the offsets moved; `INTERVAL_KEY` counts the intervals, so an idle bridge
still gets its next interval's tasks (and then costs one planning per interval). It is no partition: every
reader of offsets skips it (`is_partition_key`).

`availableNow` (drain and stop) needs bounded batches: it runs in micro-batch mode whatever the spec says.
"""

from __future__ import annotations

from collections.abc import Mapping

from bridge_job.config import JobConfig

REAL_TIME = "realTime"
MICRO_BATCH = "microBatch"
INTERVAL_KEY = "#interval"  # `#` is in no Kafka topic name and no partition number


def query_mode(config: JobConfig, available_now: bool) -> str:
    """The one place that decides how a query runs."""
    return MICRO_BATCH if available_now else config.bridge.spark.mode


def is_partition_key(key: str) -> bool:
    """Whether an offsets key names a partition (not the interval count, nor a topic pattern)."""
    return not key.startswith(("#", "/"))


def next_interval(start: Mapping[str, int]) -> dict[str, int]:
    return {INTERVAL_KEY: start.get(INTERVAL_KEY, 0) + 1}
