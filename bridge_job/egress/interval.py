"""One egress task in real-time mode: a journal partition moved to Kafka as records arrive, for an interval.

The task follows its journal partition (kafka/following.py) from where Kafka says it was written (the
journal reader group's committed offset, or the interval's planned start when the group has none) and
moves each range as it comes like a micro-batch task moves its range (egress/task.py: read,
deduplicate, route, convert, write; with `exactlyOnce` in one transaction with its progress). With
`atLeastOnce` the group's offset is committed once the range is acknowledged. Each range reads the
config file as it is then, so a route change applies to the next range, within milliseconds. The
interval's summary row is the sum of its ranges'.

A crash replays from the committed offset: `atLeastOnce` writes again what was written after it
(duplicates, never loss), `exactlyOnce` nothing, as in micro-batch mode.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import asdict

from bridge_job.config import Delivery, Direction, JobConfig, journal_reader_group
from bridge_job.egress import task as egress_task
from bridge_job.egress.task import TaskSummary
from bridge_job.jms.errors import JmsError
from bridge_job.jms.jvm import start_jvm
from bridge_job.jms.settings import jms_classpath, jms_tls_stores
from bridge_job.jms.tls import jvm_options
from bridge_job.journal.reading import consumer_settings
from bridge_job.kafka.following import follow
from bridge_job.spark.live import reporting


def run(
    config_path: str, topic: str, partition: int, start: int, seconds: float, live: str = ""
) -> TaskSummary:
    """Move the partition's records from `start` (or the committed offset) for `seconds`, telling the
    driver at `live` how far it got as it goes (spark/live.py)."""
    config = egress_task.current_egress(config_path).config
    if config.routes_for(Direction.KAFKA_TO_JMS):
        # Spark may hand this worker an ingress task at a later interval: its JMS client's JVM, which
        # takes seconds to start, is then ready (a reply waiting on it would wait those seconds).
        with contextlib.suppress(JmsError):  # the ingress task says what is wrong with it
            start_jvm(jms_classpath(config), jvm_options(jms_tls_stores(config)))
    summary = TaskSummary(partition, start, start, started_ms=int(time.time() * 1000))

    def move(begin: int, end: int) -> int:
        moved = egress_task.run(config_path, topic, partition, begin, end)
        summary.add(moved)
        return moved.end

    def current() -> JobConfig:
        return egress_task.current_egress(config_path).config

    at_least_once = config.bridge.delivery is Delivery.AT_LEAST_ONCE  # exactlyOnce: with the records
    group = journal_reader_group(config.bridge_id) if at_least_once else None
    if not at_least_once:
        egress_task.fence_former_writer(config, partition)  # before reading where the group got to
    with reporting(live, "egress", summary.started_ms, lambda: {str(partition): asdict(summary)}):
        followed = follow(consumer_settings(config), topic, partition, start, seconds, current, move, group)
    summary.start, summary.end = followed.began, followed.reached
    summary.ended_ms = int(time.time() * 1000)
    return summary
