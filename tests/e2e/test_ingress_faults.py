"""Kafka -> JMS under faults, on real brokers: nothing is lost when the job is killed or ActiveMQ restarts.

Records `seq`-numbered `00000000`... are produced to Kafka; a real JMS consumer takes what the bridge sends
to the queue and commits as it goes. Lost (a record never received) must be 0; duplicates, which a replayed
batch may send, are counted, printed, and must carry the `_AMQ_DUPL_ID` of their first copy.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from bridge_job.config import JmsSource
from bridge_job.jms import JmsError, detach_thread
from bridge_job.message import Destination, DestinationKind, JmsMessage, Property
from jmsbridge.artemis_server import ArtemisBroker
from jmsbridge.local import BridgeJob, JmsBroker, jms_connection
from testbed.brokers import ActiveMqBroker, KafkaBroker, free_port, wait_until
from testbed.harness import ONE_AT_A_TIME, bridge_document, to_jms_route, variants, write_yaml
from tests.support.providers import JmsProvider

pytestmark = pytest.mark.e2e


class QueueReader:
    """A JMS consumer thread that takes every message off a queue, committing each batch; it reconnects
    when the broker goes away."""

    def __init__(self, activemq: JmsBroker, queue: str) -> None:
        self.activemq, self.queue = activemq, queue
        self.messages: list[JmsMessage] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"reader-{queue}", daemon=True)

    def start(self) -> QueueReader:
        self.thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self.stopping.is_set():
                try:
                    with jms_connection(self.activemq) as connection:
                        consumer = connection.consumer(JmsSource(queue=self.queue))
                        while not self.stopping.is_set():
                            batch = consumer.receive_batch(1000, 200)
                            if batch:
                                consumer.commit()
                                self.messages.extend(batch)
                except JmsError:
                    self.stopping.wait(1.0)  # the broker is restarting
        finally:
            detach_thread()

    def seqs(self) -> Counter[int]:
        return Counter(int(str(m.body)) for m in list(self.messages))

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(30)


def produce(kafka: KafkaBroker, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 20})
    for seq in range(count):
        producer.produce(topic, f"{seq:08d}".encode(), str(seq).encode())
        if seq % 1000 == 999:
            producer.poll(0)
    assert producer.flush(60) == 0


def sent_metric(port: int, bridge: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except urllib.error.URLError:
        return 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "jmsbridge_ingress_records_total" and sample.labels == {
                "bridge": bridge,
                "outcome": "sent",
            }:
                return float(sample.value)
    return 0.0


def ingress_files(
    tmp_path: Path, activemq: JmsBroker, kafka: KafkaBroker, **spec: Any
) -> tuple[list[Path], str, str, str]:
    n = uuid.uuid4().hex[:8]
    topic, queue, bridge = f"in-{n}", f"in.{n}", f"in-{n}"
    kafka.create_topics(topic)
    document = bridge_document(bridge, activemq, kafka, [{"queue": f"unused.{n}"}], **spec)
    route = to_jms_route("to-jms", bridge, topic, {"queue": queue})
    return [write_yaml(tmp_path / "bridge.yaml", document, route)], topic, queue, bridge


def report(what: str, total: int, reader: QueueReader) -> tuple[set[int], int]:
    seqs = reader.seqs()
    lost = set(range(total)) - set(seqs)
    duplicates = sum(count - 1 for count in seqs.values())
    print(f"\n{what}: sent={total} received={len(reader.messages)} lost={len(lost)} duplicates={duplicates}")
    ids: dict[int, set[str]] = {}
    for message in reader.messages:
        # Artemis takes the id for its own duplicate detection and hands no consumer the property.
        duplicate_id = message.properties.get("_AMQ_DUPL_ID")
        if duplicate_id is not None:
            ids.setdefault(int(str(message.body)), set()).add(str(duplicate_id.value))
    assert all(len(v) == 1 for v in ids.values()), "a record sent twice carried two duplicate ids"
    return lost, duplicates


def all_received(reader: QueueReader, total: int) -> Callable[[], bool]:
    return lambda: len(reader.seqs()) >= total


def received_at_least(reader: QueueReader, count: int) -> Callable[[], bool]:
    return lambda: len(reader.messages) >= count


@ONE_AT_A_TIME
def test_no_record_lost_across_two_kills(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    """The second kill lands on a job that recovered from the first: a third would test nothing new."""
    total, kills = 6_000, 2
    files, topic, queue, _ = ingress_files(tmp_path, activemq, kafka, spark={"maxRecordsPerBatch": 1000})
    produce(kafka, topic, total)
    reader = QueueReader(activemq, queue).start()
    job = BridgeJob(files, tmp_path).start()
    try:
        for kill in range(1, kills + 1):
            target = total * kill // (kills + 1)
            wait_until(received_at_least(reader, target), 300, f"{target} before kill {kill}")
            job.kill()
            job.start()
        wait_until(all_received(reader, total), 300, f"all {total} records on {queue}")
    finally:
        job.stop()
        reader.stop()
    lost, _ = report(f"ingress crash test ({kills} kills)", total, reader)
    assert not lost, f"{len(lost)} records never reached {queue}, e.g. {sorted(lost)[:10]}"


@pytest.fixture
def own_broker(request: pytest.FixtureRequest) -> Iterator[ActiveMqBroker | ArtemisBroker]:
    """A broker of the test's own (it is killed): ActiveMQ Classic, or Artemis for `url` "artemis"."""
    broker = ArtemisBroker() if request.node.callspec.params["url"] == "artemis" else ActiveMqBroker()
    yield broker.start()
    broker.cleanup()


# ActiveMQ Classic through its failover transport and a plain tcp URL, and Artemis (its javax client,
# plain tcp, a login required): the ingress sends ride through the broker's restart on both brokers. The
# suite leaves Classic's plain tcp to JMSBRIDGE_ALL_MODES=1: the bridge's own reconnection is Artemis's
# case here, and a Classic tcp connection lost is met in test_faults.py (the patience run out).
@pytest.mark.parametrize(
    "url", variants(["failover", "tcp", "artemis"], in_the_suite=["failover", "artemis"])
)
def test_activemq_restarted_mid_stream(
    own_broker: ActiveMqBroker | ArtemisBroker, kafka: KafkaBroker, tmp_path: Path, url: str
) -> None:
    total, port = 3000, free_port()
    spec: dict[str, Any] = {"spark": {"maxRecordsPerBatch": 200}}
    env: dict[str, str] = {}
    if url == "tcp":
        properties = {"brokerURL": own_broker.url}
        spec["jms"] = {
            "connectionFactory": {
                "className": "org.apache.activemq.ActiveMQConnectionFactory",
                "properties": properties,
            }
        }
    elif url == "artemis":
        provider = JmsProvider("artemis", own_broker)
        spec["jms"], env = provider.jms(), provider.job_env()
    files, topic, queue, bridge = ingress_files(tmp_path, own_broker, kafka, **spec)
    produce(kafka, topic, total)
    job = BridgeJob(files, tmp_path, metrics_port=port, env=env).start()
    reader = QueueReader(own_broker, queue)
    try:
        wait_until(lambda: sent_metric(port, bridge) >= total // 3, 300, "a third of the records sent")
        own_broker.kill()
        threading.Event().wait(5)  # down for a while: the job must not give up
        own_broker.start()
        reader.start()
        wait_until(all_received(reader, total), 300, f"all {total} records on {queue}")
        assert job.process is not None and job.process.poll() is None, job.log()[-3000:]
        assert "jmsbridge stopped:" not in job.log()
    finally:
        job.stop()
        reader.stop()
    lost, _ = report(f"ingress, ActiveMQ restarted ({url})", total, reader)
    assert not lost, f"{len(lost)} records never reached {queue}, e.g. {sorted(lost)[:10]}"


def test_records_artemis_has_seen_are_dropped_and_the_rest_delivered(
    artemis: ArtemisBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    """What a commit whose answer was lost delivered (a broker restarted under it), or a range sent again
    after a crash: the first records reach the queue before the bridge sends them, with the duplicate ids
    the bridge gives them. Artemis refuses a whole transaction holding one of them; the bridge must not
    send that chunk again for ever (it did, until its patience ran out), but deliver the others once."""
    total, seen = 600, 150
    provider = JmsProvider("artemis", artemis)
    files, topic, queue, bridge = ingress_files(tmp_path, artemis, kafka, jms=provider.jms())
    produce(kafka, topic, total)
    destination = Destination(DestinationKind.QUEUE, queue)

    def earlier(seq: int) -> JmsMessage:
        duplicate_id = Property.string(f"{bridge}:{topic}:0:{seq}")
        return JmsMessage(destination, body=f"{seq:08d}", properties={"_AMQ_DUPL_ID": duplicate_id})

    with jms_connection(artemis) as connection, connection.producer() as producer:
        for seq in range(seen):
            producer.send(earlier(seq))
        producer.send(earlier(0))  # dropped by Artemis: the ids are what its duplicate detection sees
    job = BridgeJob(files, tmp_path, env=provider.job_env()).start()
    reader = QueueReader(artemis, queue).start()
    try:
        wait_until(all_received(reader, total), 180, f"all {total} records on {queue}")
        assert "jmsbridge stopped:" not in job.log()
    finally:
        job.stop()
        reader.stop()
    assert reader.seqs() == Counter(range(total)), "a record lost or delivered twice"
    assert "were delivered before (their duplicate ids refused)" in job.log()


def test_kafka_restarted_mid_stream(activemq: ActiveMqBroker, own_kafka: KafkaBroker, tmp_path: Path) -> None:
    """A patience well inside the test's wait: a job that cannot get going again stops with a line that
    says where it waited (the failure report carries the job's log), rather than outlasting the test."""
    total = 3000
    spec: dict[str, Any] = {"spark": {"maxRecordsPerBatch": 200}, "outages": {"patienceSeconds": 120}}
    files, topic, queue, _ = ingress_files(tmp_path, activemq, own_kafka, **spec)
    produce(own_kafka, topic, total)
    job = BridgeJob(files, tmp_path).start()
    reader = QueueReader(activemq, queue).start()
    try:
        wait_until(received_at_least(reader, total // 3), 300, "a third of the records on the queue")
        own_kafka.stop()
        threading.Event().wait(10)  # down for a while: the job must not give up
        own_kafka.start()
        wait_until(all_received(reader, total), 300, f"all {total} records on {queue}")
        assert job.process is not None and job.process.poll() is None, job.log()[-3000:]
        assert "jmsbridge stopped:" not in job.log()
    finally:
        job.stop()
        reader.stop()
    lost, _ = report("ingress, Kafka restarted", total, reader)
    assert not lost, f"{len(lost)} records never reached {queue}, e.g. {sorted(lost)[:10]}"
