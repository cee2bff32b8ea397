"""The bridge's checkpoints against its topics: checked before anything is read, reset when the user says.

A checkpoint is bound to the topics it indexes (spark/binding.py). `check_checkpoints` runs before the
ingest takes a JMS message (and again when a standby takes over): a mismatch stops the bridge, records
lost to retention stop it or are counted (`spark.onDataLoss`).

`reset_checkpoint` is the way forward the user chooses, the same from `jmsbridge reset-checkpoint` and
from the operator (the annotation `jmsbridge.dev/reset-checkpoint`, rendered as the config's
`checkpointReset`): it moves the checkpoint aside (`<checkpoint>.before-reset-<time>`, nothing is
deleted) and writes where the egress and ingress queries begin:

- `earliest`: everything the journal and the source topics hold now (replayed);
- `committed`: the journal reader group's committed offsets (what `exactlyOnce` or a real-time task
  wrote), the ingress group's where it has any (real-time tasks commit them; else from their start);
- `latest`: what is written from now on (what the topics hold now is skipped).

It says, per partition, where the old checkpoint was, what the topic holds and what is replayed or
skipped. The journal reader and ingress groups are moved to the new start too: tasks begin at what they
committed (`exactlyOnce`, and real-time mode), so they must not take the new start's records as done.

A reset the operator asked for is done once: its id is recorded in the new checkpoint (`RESET_FILE`), so
a restart, or the other instance of a standby pair taking over, does not reset again. A checkpoint that
holds no offsets yet is not reset (the id is recorded all the same): a checkpoint lost with its volume
starts from the journal's start, and a `latest` meant for an older one must not skip what it holds.
"""

from __future__ import annotations

import datetime
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge_job.config import (
    CHECKPOINT_MISMATCH,
    CheckpointPosition,
    CheckpointReset,
    Delivery,
    HealthKey,
    JobConfig,
    ingress_group,
    journal_reader_group,
)
from bridge_job.faults.stops import BridgeStopped, CheckpointMismatch
from bridge_job.ingress import task as ingress_task
from bridge_job.ingress.source import PATTERN_MARK, key, read_topics, topic_partition
from bridge_job.journal.reading import consumer_settings
from bridge_job.kafka.group_offsets import commit_offsets
from bridge_job.kafka.reading import TopicPartition, committed_offsets, new_consumer, watermarks
from bridge_job.kafka.topics import existing_partitions, partitions_of
from bridge_job.kube.health import HealthConfigMap
from bridge_job.spark import binding
from bridge_job.spark.intervals import REAL_TIME, is_partition_key

log = logging.getLogger("jmsbridge.job")

COMMIT_SECONDS = 30.0  # moving a group to the new start: Kafka must answer within this
RESET_FILE = "jmsbridge-reset.json"  # the operator's last reset request done on this checkpoint


def _ingress_checkpoint(checkpoint: Path) -> Path:
    return checkpoint / "ingress"  # inside the egress one: both go wherever the bridge's goes


def journal_partition(journal: str, k: str) -> tuple[str, int] | None:
    """The journal partition of an egress offsets key."""
    return (journal, int(k)) if is_partition_key(k) else None


def ingress_partition(k: str) -> tuple[str, int] | None:
    """The topic partition of an ingress offsets key."""
    return topic_partition(k) if is_partition_key(k) else None


def check_checkpoints(config: JobConfig, checkpoint: Path) -> None:
    """The egress and ingress checkpoints still index the topics they were taken on: checked before the
    ingest starts, so that a mismatch stops the bridge before it takes any JMS message. Records lost to
    retention are counted by the query's planning, which skips them (`spark.onDataLoss: skip`)."""
    journal = config.journal_topic

    real_time = config.bridge.spark.mode == REAL_TIME  # the tasks' progress is in their groups
    checks = [
        (checkpoint, consumer_settings(config), lambda k: journal_partition(journal, k)),
        (_ingress_checkpoint(checkpoint), ingress_task.consumer_settings(config), ingress_partition),
    ]
    for where, settings, locate in checks:
        consumer = new_consumer(settings)
        try:
            mismatches = binding.verify(consumer, settings, where, locate, committed=real_time)
        finally:
            consumer.close()
        for mismatch in mismatches:
            if mismatch.lost and config.bridge.spark.on_data_loss == "skip":
                log.warning(
                    "topic %s: %d records left before the bridge read them (%s), skipped "
                    "(spark.onDataLoss: skip)",
                    mismatch.topic,
                    mismatch.lost,
                    mismatch.expected,
                )
            elif mismatch.lost:
                raise BridgeStopped(binding.describe(mismatch, config.bridge_id, where))
            else:
                raise CheckpointMismatch(binding.describe(mismatch, config.bridge_id, where))
    if config.bridge.delivery is Delivery.EXACTLY_ONCE or real_time:  # tasks skip what the group committed
        settings = consumer_settings(config)
        consumer = new_consumer(settings)
        try:
            ahead = binding.committed_beyond(consumer, settings, journal)
        finally:
            consumer.close()
        if ahead is not None:
            raise CheckpointMismatch(binding.describe(ahead, config.bridge_id, checkpoint))


def describe_change(name: str, old: int | None, low: int, high: int, start: int) -> str:
    """One partition's line: where the checkpoint was, what the topic holds, what is replayed or skipped."""
    was = "none" if old is None else str(old)
    if old is None or not low <= old <= high:  # no position, or one of another topic (or lost records)
        change = f"skips {start - low}, reads {high - start}"
    elif start < old:
        change = f"replays {old - start}"
    else:
        change = f"skips {start - old}" if start > old else "nothing replayed or skipped"
    return f"{name}: checkpoint at {was}, topic holds {low}..{high}: starts at {start} ({change} records)"


def _start_positions(
    consumer: Any,
    settings: Mapping[str, Any],
    position: CheckpointPosition,
    partitions: list[tuple[str, int]],
    old: Mapping[str, int],
    keys: Callable[[str, int], str],
    said: list[str],
) -> dict[str, int]:
    committed = {}
    if position == "committed" and partitions:
        found = committed_offsets(settings, [TopicPartition(t, p) for t, p in partitions], 30)
        committed = {(c.topic, c.partition): c.offset for c in found if c.offset >= 0}
    start: dict[str, int] = {}
    for topic, partition in partitions:
        low, high = watermarks(consumer, topic, partition)
        chosen = {"earliest": low, "latest": high}.get(position, committed.get((topic, partition), low))
        k = keys(topic, partition)
        start[k] = min(max(chosen, low), high)
        said.append(describe_change(f"topic {topic} partition {partition}", old.get(k), low, high, start[k]))
    return start


def reset_checkpoint(config: JobConfig, checkpoint: Path, position: CheckpointPosition) -> list[str]:
    """Move the checkpoint aside and start the queries at `position`; the lines say what changed."""
    said: list[str] = []
    old_egress = binding.spark_offsets(checkpoint) or {}
    old_ingress = binding.spark_offsets(_ingress_checkpoint(checkpoint)) or {}
    journal = config.journal_topic
    real_time = config.bridge.spark.mode == REAL_TIME  # where the tasks got is in their groups
    settings = consumer_settings(config)
    consumer = new_consumer(settings)
    try:
        if real_time:
            old_egress = binding.with_committed(settings, old_egress, lambda k: journal_partition(journal, k))
        journal_partitions = partitions_of(consumer, journal) or []
        egress = _start_positions(
            consumer,
            settings,
            position,
            [(journal, p) for p in journal_partitions],
            old_egress,
            lambda t, p: str(p),
            said,
        )
        if egress:  # tasks skip what the reader group committed (exactlyOnce, realTime): it starts there too
            moved = [TopicPartition(journal, int(p), o) for p, o in egress.items()]
            commit_offsets(config.bridge.kafka, journal_reader_group(config.bridge_id), moved, COMMIT_SECONDS)
    finally:
        consumer.close()

    ingress_settings = ingress_task.consumer_settings(config)
    ingress_consumer = new_consumer(ingress_settings)
    try:
        if real_time:
            old_ingress = binding.with_committed(ingress_settings, old_ingress, ingress_partition)
        existing = existing_partitions(ingress_consumer)
        topics = set(read_topics(config, list(existing))) | {
            topic_partition(k)[0]
            for k in old_ingress
            if is_partition_key(k) and topic_partition(k)[0] in existing
        }
        partitions = [(t, p) for t in sorted(topics) for p in existing[t]]
        ingress = _start_positions(
            ingress_consumer, ingress_settings, position, partitions, old_ingress, key, said
        )
        if ingress:  # real-time tasks begin at what the ingress group committed: it starts there too
            moved = [TopicPartition(*topic_partition(k), o) for k, o in ingress.items()]
            commit_offsets(config.bridge.kafka, ingress_group(config.bridge_id), moved, COMMIT_SECONDS)
    finally:
        ingress_consumer.close()
    ingress |= {k: 0 for k in old_ingress if k.startswith(PATTERN_MARK)}  # patterns stay in effect

    if checkpoint.exists():
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = checkpoint.with_name(f"{checkpoint.name}.before-reset-{stamp}")
        checkpoint.rename(aside)
        said.append(f"old checkpoint moved to {aside}")
    binding.save_start(checkpoint, egress)
    binding.save_start(_ingress_checkpoint(checkpoint), ingress)
    return said


@dataclass(frozen=True)
class ResetDone:
    """A requested reset, done now: what the job reports to the operator (which posts it as an Event)."""

    id: str
    to: CheckpointPosition
    lines: tuple[str, ...]

    def report(self) -> dict[str, Any]:
        summary = "; ".join(self.lines)
        return {HealthKey.RESET_ID: self.id, HealthKey.RESET_TO: self.to, HealthKey.RESET_SUMMARY: summary}


def reset_due(request: CheckpointReset | None, checkpoint: Path) -> bool:
    """Whether the config asks for a reset this checkpoint has not had yet."""
    if request is None:
        return False
    path = checkpoint / RESET_FILE
    done = json.loads(path.read_text()).get("id") if path.exists() else None
    return bool(done != request.id)


def apply_requested_reset(config: JobConfig, checkpoint: Path) -> ResetDone | None:
    """The config's `checkpointReset`, when this checkpoint has not had it yet; None when not due."""
    request = config.checkpoint_reset
    if request is None or not reset_due(request, checkpoint):
        return None
    has_offsets = any(
        binding.spark_offsets(c) is not None or binding.load_start(c) is not None
        for c in (checkpoint, _ingress_checkpoint(checkpoint))
    )
    if has_offsets:
        lines = tuple(reset_checkpoint(config, checkpoint, request.to))
    else:
        lines = (f"checkpoint {checkpoint} holds no offsets yet: nothing to reset",)
    binding.write_json(checkpoint / RESET_FILE, {"id": request.id, "to": request.to})
    done = ResetDone(request.id, request.to, lines)
    for line in lines:
        log.info("checkpoint reset %s to %s: %s", request.id, request.to, line)
    return done


def prepare_checkpoint(
    config: JobConfig, checkpoint: Path, report: HealthConfigMap | None, *, may_reset: bool
) -> None:
    """A reset the operator asked for (when this instance may do it), then the check. A reset not done
    yet puts the check off: it is what the reset mends. A mismatch is said in the health ConfigMap before
    the job exits: the operator shows it as Stalled, reason CheckpointMismatch, with the job's line."""
    if may_reset:
        done = apply_requested_reset(config, checkpoint)
        if done is not None and report is not None:
            report({HealthKey.CHECKPOINT_RESET: done.report()})
    elif reset_due(config.checkpoint_reset, checkpoint):
        return
    try:
        check_checkpoints(config, checkpoint)
    except CheckpointMismatch as error:
        if report is not None:
            report.report_stop(CHECKPOINT_MISMATCH, error.reason)
        raise


class Losses:
    """Records lost to retention and skipped: the planners' tally in the checkpoints
    (`binding.count_lost`), taken into the `jmsbridge_records_lost` metric and the health report (the
    operator posts an Event for each increase). The planning runs in a process of its own, hence a file."""

    def __init__(
        self,
        checkpoint: Path,
        record: Callable[[str, int], None],
        report: Callable[[dict[str, Any]], None] | None,
    ) -> None:
        self.checkpoints = (checkpoint, _ingress_checkpoint(checkpoint))
        self.record = record
        self.report = report
        self.seen: dict[str, int] = {}

    def sync(self) -> None:
        totals: dict[str, int] = {}
        for checkpoint in self.checkpoints:
            for topic, total in binding.lost_totals(checkpoint).items():
                totals[topic] = totals.get(topic, 0) + total
        grown = {t: n - self.seen.get(t, 0) for t, n in totals.items() if n > self.seen.get(t, 0)}
        for topic, more in grown.items():
            self.record(topic, more)
        self.seen = totals
        if grown and self.report is not None:
            self.report({HealthKey.RECORDS_LOST: totals})
