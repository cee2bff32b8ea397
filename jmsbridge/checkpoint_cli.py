"""`jmsbridge reset-checkpoint`: start a bridge again from a stated position after a checkpoint mismatch.

A checkpoint is bound to the topics it indexes (bridge_job/spark/binding.py); when they were recreated,
the job stops rather than skip or drop anything. This command is the way forward the user chooses: it
moves the checkpoint aside (`<checkpoint>.before-reset-<time>`, nothing is deleted), and writes where the
egress and ingress queries begin:

- `earliest`: everything the journal and the source topics hold now (replayed);
- `committed`: the journal reader group's committed offsets (what `exactlyOnce` wrote), the ingress
  group's where it has any (the bridge commits none: else from their start);
- `latest`: what is written from now on (what the topics hold now is skipped).

It prints, per partition, where the old checkpoint was, what the topic holds and what is replayed or
skipped. With `exactlyOnce` the journal reader group is moved to the new start too, so that the egress
does not take the new journal's records as written. Run it with the job stopped.
"""

from __future__ import annotations

import argparse
import datetime
import tempfile
from pathlib import Path
from typing import Any

POSITIONS = ("earliest", "committed", "latest")


def register(commands: Any) -> None:
    reset = commands.add_parser(
        "reset-checkpoint",
        help="start a bridge again from a stated position (after a checkpoint mismatch)",
        description=__doc__.splitlines()[0],
    )
    reset.add_argument(
        "-f", "--file", "--config", dest="files", action="append", type=Path, required=True,
        help="the bridge's YAML (JmsBridge and JmsBridgeRoutes) or its rendered job config",
    )  # fmt: skip
    reset.add_argument(
        "--checkpoint", type=Path,
        help="checkpoint directory (default: as `jmsbridge job` with the same --work-dir)",
    )  # fmt: skip
    reset.add_argument("--work-dir", type=Path, help="the work dir `jmsbridge job` was given, if any")
    reset.add_argument("--to", dest="position", choices=POSITIONS, required=True, help="where to start")
    reset.set_defaults(run=run)


def _describe(name: str, old: int | None, low: int, high: int, start: int) -> str:
    was = "none" if old is None else str(old)
    if old is None or not low <= old <= high:  # no position, or one of another topic (or lost records)
        change = f"skips {start - low}, reads {high - start}"
    elif start < old:
        change = f"replays {old - start}"
    else:
        change = f"skips {start - old}" if start > old else "nothing replayed or skipped"
    return f"{name}: checkpoint at {was}, topic holds {low}..{high}: starts at {start} ({change} records)"


def run(args: argparse.Namespace) -> int:
    from confluent_kafka import Consumer, TopicPartition

    from bridge_job.config import ConfigError
    from bridge_job.config.rendered import RenderedConfig
    from bridge_job.journal.reading import consumer_settings
    from bridge_job.kafka_to_jms import task as ingress_task
    from bridge_job.kafka_to_jms.source import PATTERN_MARK, key, read_topics, topic_partition
    from bridge_job.spark import binding

    try:
        config = RenderedConfig(args.files, Path(tempfile.mkdtemp(prefix="jmsbridge-reset-"))).config
    except ConfigError as error:
        print(f"invalid configuration:\n{error}")
        return 1
    from jmsbridge.job_cli import local_checkpoints

    checkpoints = local_checkpoints(args) or Path(config.bridge.spark.checkpoint.path)
    checkpoint: Path = args.checkpoint or checkpoints / config.bridge_id
    position: str = args.position
    old_egress = binding.spark_offsets(checkpoint) or {}
    old_ingress = binding.spark_offsets(checkpoint / "ingress") or {}

    def positions(consumer: Any, partitions: list[tuple[str, int]], old: dict[str, int], keys: Any) -> Any:
        committed = {}
        if position == "committed" and partitions:
            found = consumer.committed([TopicPartition(t, p) for t, p in partitions], timeout=30)
            committed = {(c.topic, c.partition): c.offset for c in found if c.offset >= 0}
        start: dict[str, int] = {}
        for topic, partition in partitions:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=30, cached=False
            )
            chosen = {"earliest": low, "latest": high}.get(position, committed.get((topic, partition), low))
            k = keys(topic, partition)
            start[k] = min(max(chosen, low), high)
            print(_describe(f"topic {topic} partition {partition}", old.get(k), low, high, start[k]))
        return start

    journal = config.journal_topic
    settings = consumer_settings(config)
    consumer = Consumer(settings)
    try:
        metadata = consumer.list_topics(timeout=30)
        topic = metadata.topics.get(journal)
        journal_partitions = sorted(topic.partitions) if topic is not None and topic.error is None else []
        egress = positions(
            consumer, [(journal, p) for p in journal_partitions], old_egress, lambda t, p: str(p)
        )
        if egress:  # exactlyOnce tasks skip what the reader group committed: it starts there too
            consumer.commit(
                offsets=[TopicPartition(journal, int(p), o) for p, o in egress.items()], asynchronous=False
            )
    finally:
        consumer.close()

    ingress_consumer = Consumer(ingress_task.consumer_settings(config))
    try:
        existing = [n for n, t in ingress_consumer.list_topics(timeout=30).topics.items() if t.error is None]
        topics = set(read_topics(config, existing)) | {
            topic_partition(k)[0]
            for k in old_ingress
            if not k.startswith(PATTERN_MARK) and topic_partition(k)[0] in existing
        }
        metadata = ingress_consumer.list_topics(timeout=30)
        partitions = [(t, p) for t in sorted(topics) for p in sorted(metadata.topics[t].partitions)]
        ingress = positions(ingress_consumer, partitions, old_ingress, key)
    finally:
        ingress_consumer.close()
    ingress |= {k: 0 for k in old_ingress if k.startswith(PATTERN_MARK)}  # patterns stay in effect

    if checkpoint.exists():
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = checkpoint.with_name(f"{checkpoint.name}.before-reset-{stamp}")
        checkpoint.rename(aside)
        print(f"old checkpoint moved to {aside}")
    binding.save_start(checkpoint, egress)
    binding.save_start(checkpoint / "ingress", ingress)
    print(f"checkpoint {checkpoint} reset to {position}: start the bridge again")
    return 0
