"""The ingest on executors (issue 46, step 4; the switch `JMSBRIDGE_INGEST_RUN_ON=executors`): the ingest
query's tasks take the JMS messages, not the driver.

Two busy queues that hash to different ingest partitions are taken in by two tasks side by side: every
message arrives, in order per destination; the driver's own Python process holds no connection to the JMS
broker; the figures come from the tasks' rows. `local[8]` runs the tasks in Python workers of one JVM
(`local-cluster` with separate executor JVMs is step 6).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import psutil
import pytest

from bridge_job.formats import KafkaRecord, native
from bridge_job.formats.journal import destination_partition
from bridge_job.message import Destination, DestinationKind, JmsMessage
from jmsbridge.local import BridgeJob
from testbed.brokers import ActiveMqBroker, KafkaBroker, free_port, wait_until
from testbed.harness import bridge_document, read_topics, route_document, send, write_yaml
from tests.e2e.test_egress import sample

pytestmark = pytest.mark.e2e

MESSAGES = 150  # per queue


def queues_apart(n: str) -> tuple[str, str]:
    """Two queue names whose destinations go to ingest partitions 0 and 1 of two."""
    names = (f"busy.{n}.{i}" for i in range(100))
    by_partition: dict[int, str] = {}
    for name in names:
        by_partition.setdefault(destination_partition(Destination(DestinationKind.QUEUE, name), 2), name)
        if len(by_partition) == 2:
            return by_partition[0], by_partition[1]
    raise AssertionError("no two queue names hash apart")


def test_two_queues_are_taken_in_by_two_tasks_and_the_driver_takes_nothing(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    n = uuid.uuid4().hex[:8]
    bridge_id = f"exec-{n}"
    first, second = queues_apart(n)
    topics = {first: f"first-{n}", second: f"second-{n}"}
    kafka.create_topics(*topics.values())
    sources: list[dict[str, object]] = [{"queue": first}, {"queue": second}]
    bridge = bridge_document(bridge_id, activemq, kafka, sources)
    bridge["spec"]["kafka"]["journalPartitions"] = 2
    routes = [
        route_document(f"r{i}", bridge_id, topic, order=i + 1, match={"address": queue})
        for i, (queue, topic) in enumerate(topics.items())
    ]
    files = [write_yaml(tmp_path / "bridge.yaml", bridge), write_yaml(tmp_path / "routes.yaml", *routes)]
    port = free_port()
    job = BridgeJob(files, tmp_path, metrics_port=port, env={"JMSBRIDGE_INGEST_RUN_ON": "executors"})
    job.start()
    try:
        job.wait_running()

        def wave(numbers: range) -> None:
            send(
                activemq,
                [
                    JmsMessage(Destination(DestinationKind.QUEUE, queue), body=f"{queue}:{i}")
                    for i in numbers
                    for queue in topics
                ],
            )

        wave(range(MESSAGES))
        read_topics(kafka, topics.values(), 2 * MESSAGES)
        # An interval of the ingest query ended (its consumers closed), and the next one takes the rest.
        ended = {"bridge": bridge_id, "query": "ingest"}
        progressed = "jmsbridge_query_last_progress_timestamp_seconds"
        wait_until(lambda: sample(port, progressed, ended) is not None, 60, "an ingest interval ended")
        wave(range(MESSAGES, 2 * MESSAGES))
        records = read_topics(kafka, topics.values(), 4 * MESSAGES, settle=1.0)
        for queue, topic in topics.items():
            bodies = [
                native.decode(KafkaRecord(r.value, r.headers, r.key)).body
                for r in records
                if r.topic == topic
            ]
            firsts = list(dict.fromkeys(bodies))  # atLeastOnce may repeat; nothing is missing or reordered
            assert firsts == [f"{queue}:{i}" for i in range(2 * MESSAGES)]

        # The figures come from the ingest tasks' rows (live reports, then the interval's end).
        ingested = {"bridge": bridge_id}
        wait_until(
            lambda: (sample(port, "jmsbridge_ingested_messages_total", ingested) or 0) >= 4 * MESSAGES,
            60,
            "the ingest tasks' rows counted",
        )
        # JMS is reported connected from the tasks' rows (ingest/health.py).
        assert sample(port, "jmsbridge_connected", {"bridge": bridge_id, "system": "jms"}) == 1
        # The driver's Python process (the job's own) never connected to the broker: the tasks did.
        assert job.process is not None
        broker_port = activemq.port
        driver = psutil.Process(job.process.pid)
        assert not [c for c in driver.net_connections("tcp") if c.raddr and c.raddr.port == broker_port]
        workers = [p for p in driver.children(recursive=True) if p.name().startswith("python")]
        assert any(
            c.raddr and c.raddr.port == broker_port for p in workers for c in p.net_connections("tcp")
        ), "no Python worker holds a connection to the broker"
    finally:
        job.stop()
