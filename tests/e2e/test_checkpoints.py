"""A checkpoint is bound to the topics it indexes: the job as a process on real brokers, run again with the
same checkpoint after its topics were recreated or lost records.

Each scenario either delivers every message or stops with one clear line (exit 2) before the ingest takes
a JMS message; what was sent meanwhile stays on the queue and arrives once the user reset the checkpoint
(`jmsbridge reset-checkpoint`, or the config's `checkpointReset` that the operator renders from its
annotation). Several scenarios share one bridge and checkpoint: each job start costs Spark's start-up, and
a run that stops on a mismatch stops before Spark starts.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from bridge_job.config import CheckpointReset
from bridge_job.config.rendered import RenderedConfig
from bridge_job.message import Destination, DestinationKind, JmsMessage, Property
from jmsbridge.local import BridgeJob
from testbed.brokers import ActiveMqBroker, KafkaBroker, wait_until
from testbed.harness import (
    bridge_document,
    deliveries,
    read_topics,
    received_from,
    route_document,
    send,
    to_jms_route,
    write_yaml,
)

pytestmark = pytest.mark.e2e

STOP_LINE = "jmsbridge stopped:"


def numbered(queue: str, seq: int) -> JmsMessage:
    return JmsMessage(
        Destination(DestinationKind.QUEUE, queue), body=f"m{seq}", properties={"seq": Property.of(seq)}
    )


def produce(kafka: KafkaBroker, topic: str, count: int, prefix: str = "r") -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for i in range(count):
        producer.produce(topic, f"{prefix}{i}".encode(), str(i).encode())
    assert producer.flush(30) == 0


def recreate(kafka: KafkaBroker, topic: str, partitions: int = 1) -> None:
    kafka.delete_topics(topic)
    wait_until(
        lambda: (
            topic not in AdminClient({"bootstrap.servers": kafka.bootstrap}).list_topics(timeout=10).topics
        ),
        30,
        f"{topic} deleted",
    )
    kafka.create_topics(topic, partitions=partitions)


def stop_line(job: BridgeJob) -> str:
    lines = [line for line in job.log().splitlines() if STOP_LINE in line]
    assert len(lines) == 1, job.log()[-4000:]
    return lines[0]


def run_to_stop(job: BridgeJob) -> str:
    """A run that must stop on its own with exit 2: its one stop line."""
    job.start()
    assert job.wait_exit(180) == 2, job.log()[-4000:]
    return stop_line(job)


def reset(files: list[Path], checkpoint: Path, to: str) -> str:
    argv = [sys.executable, "-m", "jmsbridge", "reset-checkpoint", *[f"--file={f}" for f in files]]
    argv += ["--checkpoint", str(checkpoint), "--to", to]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def keys(records: list) -> set[int]:  # type: ignore[type-arg]
    return {int(r.key) for r in records}


@pytest.mark.parametrize("delivery", deliveries("exactlyOnce"))  # both with JMSBRIDGE_ALL_MODES=1
def test_recreated_journal_stops_before_taking_jms_messages_and_reset_delivers_them(
    tmp_path: Path, kafka: KafkaBroker, activemq: ActiveMqBroker, delivery: str
) -> None:
    n = uuid.uuid4().hex[:8]
    name, queue, topic = f"ckpt-{n}", f"ckpt.{n}", f"ckpt-{n}"
    journal = f"{name}.jms-bridge.journal"
    kafka.create_topics(topic)
    bridge = bridge_document(name, activemq, kafka, [{"queue": queue}], delivery=delivery)
    route = route_document("all", name, topic, key={"property": "seq"})
    files = [write_yaml(tmp_path / "bridge.yaml", bridge), write_yaml(tmp_path / "routes.yaml", route)]
    checkpoint = tmp_path / "checkpoint"
    job = BridgeJob(files, tmp_path)

    # 1. a first run delivers 10 messages, and is stopped
    job.start()
    job.wait_running()
    send(activemq, [numbered(queue, i) for i in range(10)])
    assert keys(read_topics(kafka, [topic], 10)) == set(range(10))
    wait_until(
        lambda: (
            (checkpoint / "jmsbridge-binding.json").exists()
            and '"records": {"0"' in (checkpoint / "jmsbridge-binding.json").read_text()
        ),
        60,
        "the binding's fingerprint",
    )
    job.stop()

    # 2. the journal recreated, longer than before (a restored or foreign journal): the bridge stops
    recreate(kafka, journal)
    produce(kafka, journal, 40, prefix="foreign")
    send(activemq, [numbered(queue, i) for i in range(10, 15)])
    line = run_to_stop(job)
    assert f"bridge {name}: checkpoint mismatch on topic {journal}: checkpoint {checkpoint}" in line, line
    assert "jmsbridge reset-checkpoint" in line and "--to earliest|committed|latest" in line

    # 3. the journal recreated empty (shorter than before): the bridge stops too
    kafka.delete_topics(journal)
    line = run_to_stop(job)
    # Kafka gives every topic an id of its own: the recreated one is told apart by it
    assert f"checkpoint mismatch on topic {journal}" in line and "was taken on another topic" in line, line
    assert "(found topic id " in line, line

    # nothing was taken off the queue by the stopped runs, nothing reached the topic
    assert len(read_topics(kafka, [topic], 10, settle=1.0)) == 10

    # 4. the user resets to the journal's start: the 5 messages on the queue arrive, none more
    printed = reset(files, checkpoint, "earliest")
    assert f"topic {journal} partition 0: checkpoint at" in printed and "starts at 0" in printed, printed
    assert list(tmp_path.glob("checkpoint.before-reset-*")), printed
    job.start()
    job.wait_running()
    records = read_topics(kafka, [topic], 15, settle=2.0)
    assert keys(records) == set(range(15)) and len(records) == 15
    job.stop()


def test_journal_records_lost_and_recreated_source_topic_stop_with_one_line(
    tmp_path: Path, kafka: KafkaBroker, activemq: ActiveMqBroker
) -> None:
    n = uuid.uuid4().hex[:8]
    name, queue, topic, source, back = (
        f"ckpi-{n}",
        f"ckpi.{n}",
        f"ckpi-{n}",
        f"ckpi-src-{n}",
        f"ckpi.back.{n}",
    )
    journal = f"{name}.jms-bridge.journal"
    kafka.create_topics(topic, source)
    bridge = bridge_document(name, activemq, kafka, [{"queue": queue}])
    routes = [
        route_document("out", name, topic, key={"property": "seq"}),
        to_jms_route("in", name, source, {"queue": back}),
    ]
    files = [write_yaml(tmp_path / "bridge.yaml", bridge), write_yaml(tmp_path / "routes.yaml", *routes)]
    checkpoint = tmp_path / "checkpoint"
    job = BridgeJob(files, tmp_path)

    job.start()
    job.wait_running()
    produce(kafka, source, 8)
    send(activemq, [numbered(queue, i) for i in range(3)])
    assert len(received_from(activemq, back, 8)) == 8
    assert keys(read_topics(kafka, [topic], 3)) == {0, 1, 2}
    job.stop()

    # while it is stopped: records deleted from the journal before egress read them, and the source
    # topic recreated, shorter (the ingress checkpoint's offsets lie beyond its end)
    produce(kafka, journal, 5, prefix="unread")
    probe = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": f"probe-{n}"})
    _, high = probe.get_watermark_offsets(TopicPartition(journal, 0), timeout=30, cached=False)
    probe.close()
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.delete_records([TopicPartition(journal, 0, high)]).values():
        future.result(timeout=30)
    recreate(kafka, source)
    produce(kafka, source, 2, prefix="new")

    # the journal's loss stops the bridge by default, named
    line = run_to_stop(job)
    assert f"bridge {name}: topic {journal} lost records before the bridge read them" in line, line
    assert "spark.onDataLoss: skip" in line

    # with spark.onDataLoss: skip the loss is counted and logged; the recreated source topic still stops it
    bridge["spec"]["spark"]["onDataLoss"] = "skip"
    write_yaml(files[0], bridge)
    line = run_to_stop(job)
    assert f"checkpoint mismatch on topic {source}: checkpoint {checkpoint / 'ingress'}" in line, line
    assert f"topic {journal}: 5 records left before the bridge read them" in job.log(), job.log()[-3000:]

    # reset to latest as the operator asks for it (the annotation, rendered into the job's config): the
    # job resets before its ingest starts; what the topics hold now is skipped, the bridge runs on
    (tmp_path / "render").mkdir()
    rendered = RenderedConfig(files, tmp_path / "render").config
    requested = rendered.model_copy(update={"checkpoint_reset": CheckpointReset(to="latest", id="r1")})
    job.files = [write_yaml(tmp_path / "job.yaml", requested.dump())]
    job.start()
    job.wait_running()
    said = job.log()
    # The checkpoint's own offset (where its last interval began); Kafka deleted the group's committed one
    # (8) with the topic.
    reset = f"checkpoint reset r1 to latest: topic {source} partition 0: checkpoint at 0, topic holds 0..2"
    assert reset in said, said[-3000:]
    assert list(tmp_path.glob("checkpoint.before-reset-*"))
    send(activemq, [numbered(queue, 3)])
    produce(kafka, source, 1, prefix="after")
    assert keys(read_topics(kafka, [topic], 4)) == {0, 1, 2, 3}
    assert [m.body for m in received_from(activemq, back, 1)] in (["after0"], [b"after0"])
    job.stop()
