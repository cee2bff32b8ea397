"""One ingress task in real-time mode: a topic partition sent to JMS as records arrive, for an interval.

The task follows its partition (kafka/following.py) from the ingress group's committed offset (or the
interval's planned start) and sends each range as it comes like a micro-batch task sends its range
(ingress/task.py: read, route, convert, send in JMS transactions), then commits the group's offset.
A crash sends again what was sent after the last commit: duplicates, never a loss, as in micro-batch
mode. Each range reads the config as it is then; a change of the topics the kafkaToJms routes read ends
the interval, so that the next one reads them.
"""

from __future__ import annotations

import time
from dataclasses import asdict

from bridge_job.config import JobConfig, ingress_group
from bridge_job.ingress import task as ingress_task
from bridge_job.ingress.task import IngressSummary
from bridge_job.kafka.following import follow
from bridge_job.spark.live import reporting


def run(
    config_path: str, topic: str, partition: int, start: int, seconds: float, live: str = ""
) -> IngressSummary:
    """Send the partition's records from `start` (or the committed offset) for `seconds`, telling the
    driver at `live` how far it got as it goes (spark/live.py)."""
    config = ingress_task.current_ingress(config_path).config
    topics = config.source_topics()
    summary = IngressSummary(topic, partition, start, start, started_ms=int(time.time() * 1000))

    def move(begin: int, end: int) -> int:
        moved = ingress_task.run(config_path, topic, partition, begin, end)
        summary.add(moved)
        return end

    def current() -> JobConfig:
        return ingress_task.current_ingress(config_path).config

    def topics_changed() -> bool:  # the next interval reads the topics as they are now
        return current().source_topics() != topics

    settings = ingress_task.consumer_settings(config)
    name = f"{topic}:{partition}"
    with reporting(live, "ingress", summary.started_ms, lambda: {name: asdict(summary)}):
        group = ingress_group(config.bridge_id)
        followed = follow(
            settings, topic, partition, start, seconds, current, move, group, done=topics_changed
        )
    summary.start, summary.end = followed.began, followed.reached
    summary.ended_ms = int(time.time() * 1000)
    return summary
