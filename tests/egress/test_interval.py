"""One real-time egress task in-process, on Apache Kafka, without Spark: records move as
they are journalled, a route change applies to the running task, and the next interval begins where
Kafka says this one got to."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from bridge_job.config import journal_reader_group
from bridge_job.egress import interval as egress_interval
from bridge_job.egress.task import TaskSummary
from bridge_job.kafka.reading import close_consumers
from bridge_job.kafka.writing import close_producers
from testbed.brokers import KafkaBroker
from testbed.harness import read_topics
from tests.support.journal import journal, journalled_bridge, order


@pytest.fixture(autouse=True, scope="module")
def clients() -> Iterator[None]:
    yield
    close_consumers()
    close_producers()


def in_background(*args: Any) -> tuple[threading.Thread, list[TaskSummary]]:
    done: list[TaskSummary] = []
    thread = threading.Thread(target=lambda: done.append(egress_interval.run(*args)), daemon=True)
    thread.start()
    return thread, done


def committed(kafka: KafkaBroker, bridge_id: str, topic: str) -> int:
    reader = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": journal_reader_group(bridge_id)})
    try:
        (progress,) = reader.committed([TopicPartition(topic, 0)], timeout=10)
    finally:
        reader.close()
    return int(progress.offset)


@pytest.mark.slow
@pytest.mark.parametrize("delivery", ["atLeastOnce", "exactlyOnce"])
def test_records_move_while_the_task_runs_and_a_route_change_applies_to_it(
    kafka: KafkaBroker, tmp_path: Path, delivery: str
) -> None:
    job, path, topic = journalled_bridge(kafka, tmp_path, delivery=delivery)
    moved_to = f"moved-{uuid.uuid4().hex[:8]}"
    kafka.create_topics(moved_to)
    thread, done = in_background(path, job.journal_topic, 0, 0, 10.0)

    journal(kafka, job, order(0), order(1))
    assert [r.key for r in read_topics(kafka, [topic], 2, timeout=30)] == [b"0", b"1"]  # the task still runs
    document = job.dump()
    document["routes"][0]["spec"]["kafkaTopic"] = moved_to
    Path(path).write_text(yaml.safe_dump(document))  # as a ConfigMap update lands in the pod
    journal(kafka, job, order(2))
    assert [r.key for r in read_topics(kafka, [moved_to], 1, timeout=30)] == [b"2"]

    thread.join(30)
    (summary,) = done
    assert (summary.start, summary.end, summary.records, summary.published) == (0, 3, 3, 3)
    assert committed(kafka, job.bridge_id, job.journal_topic) == 3  # the progress, in Kafka

    again, _ = in_background(path, job.journal_topic, 0, 0, 1.0)  # the next interval, planned at 0
    again.join(30)
    assert len(read_topics(kafka, [topic, moved_to], 3, settle=1.0)) == 3  # nothing written twice


def test_records_gone_before_they_were_moved_end_the_interval_without_a_skip(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    """Retention took records the task had not moved: it moves nothing and returns, so that the next
    planning stops the bridge or counts the loss (`spark.onDataLoss`) instead of the task skipping them."""
    job, path, topic = journalled_bridge(kafka, tmp_path)
    journal(kafka, job, *(order(seq) for seq in range(5)))
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.delete_records([TopicPartition(job.journal_topic, 0, 3)]).values():
        future.result(timeout=30)
    thread, done = in_background(path, job.journal_topic, 0, 0, 30.0)
    thread.join(20)  # well before the interval's end
    (summary,) = done
    assert (summary.end, summary.published) == (0, 0)
    assert read_topics(kafka, [topic], 0, settle=1.0) == []
