"""A reset the operator asks for (the config's `checkpointReset`), done by the job on a real broker, once;
and records lost to retention, from the planners' tally into the metric and the health report."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from bridge_job.config import CheckpointReset, JobConfig
from bridge_job.kafka.waiting import asking
from bridge_job.spark import binding
from bridge_job.supervision.checkpoints import Losses, apply_requested_reset, reset_due
from testbed.brokers import KafkaBroker
from testbed.builders import config


def bridge_with_journal(kafka: KafkaBroker, records: int) -> JobConfig:
    job = config(name=f"reset{uuid.uuid4().hex[:8]}", bootstrap=kafka.bootstrap)
    kafka.create_topics(job.journal_topic, partitions=1)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for i in range(records):
        producer.produce(job.journal_topic, f"r{i}".encode())
    assert producer.flush(30) == 0
    return job


def spark_checkpoint_at(checkpoint: Path, offset: int) -> None:
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / "0").write_text(f'v1\n{{"batchWatermarkMs":0}}\n{{"0": {offset}}}')


def test_a_requested_reset_is_done_once_and_says_what_it_skips(kafka: KafkaBroker, tmp_path: Path) -> None:
    job = bridge_with_journal(kafka, 5)
    checkpoint = tmp_path / job.bridge_id
    spark_checkpoint_at(checkpoint, 24)  # taken on an older journal, longer than this one
    requested = job.model_copy(update={"checkpoint_reset": CheckpointReset(to="latest", id="r1")})

    # As the job asks (supervision/runner.py): a fresh broker's group coordinator may still be loading.
    done = asking(requested, "resetting", lambda: apply_requested_reset(requested, checkpoint))

    assert done is not None and done.to == "latest"
    summary = done.report()["summary"]
    assert (
        f"topic {job.journal_topic} partition 0: checkpoint at 24, topic holds 0..5: starts at 5" in summary
    )
    assert "skips 5, reads 0" in summary and "old checkpoint moved to" in summary
    assert binding.load_start(checkpoint) == {"0": 5}
    assert list(tmp_path.glob(f"{job.bridge_id}.before-reset-*"))  # moved aside, not deleted
    # a restart (or the other instance taking over) with the same config resets nothing
    assert not reset_due(requested.checkpoint_reset, checkpoint)
    assert apply_requested_reset(requested, checkpoint) is None
    assert binding.load_start(checkpoint) == {"0": 5}
    # a new request is due again
    again = job.model_copy(update={"checkpoint_reset": CheckpointReset(to="earliest", id="r2")})
    assert reset_due(again.checkpoint_reset, checkpoint)


def test_a_checkpoint_without_offsets_is_not_reset(kafka: KafkaBroker, tmp_path: Path) -> None:
    job = bridge_with_journal(kafka, 3)
    checkpoint = tmp_path / job.bridge_id  # lost with its volume, say: starts from the journal's start
    requested = job.model_copy(update={"checkpoint_reset": CheckpointReset(to="latest", id="r1")})

    done = apply_requested_reset(requested, checkpoint)

    assert done is not None and "holds no offsets yet: nothing to reset" in done.report()["summary"]
    assert binding.load_start(checkpoint) is None  # `latest` did not skip the 3 records
    assert not reset_due(requested.checkpoint_reset, checkpoint)


def test_records_lost_reach_the_metric_and_the_report_once(tmp_path: Path) -> None:
    recorded: list[tuple[str, int]] = []
    reports: list[dict[str, Any]] = []
    losses = Losses(tmp_path, lambda topic, n: recorded.append((topic, n)), reports.append)
    losses.sync()
    assert recorded == [] and reports == []

    binding.count_lost(tmp_path, "journal", {0: 0}, {0: 4})
    binding.count_lost(tmp_path / "ingress", "orders", {0: 2}, {0: 3})
    losses.sync()
    losses.sync()  # nothing new
    binding.count_lost(tmp_path, "journal", {0: 0}, {0: 6})
    losses.sync()

    assert recorded == [("journal", 4), ("orders", 1), ("journal", 2)]
    assert reports == [
        {"recordsLost": {"journal": 4, "orders": 1}},
        {"recordsLost": {"journal": 6, "orders": 1}},
    ]
