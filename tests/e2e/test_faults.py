"""The fault suite: the bridge job as a process on real brokers, under the faults an operator meets.

Poison messages mixed with good ones, ActiveMQ killed and restarted under load (failover and plain tcp
URLs; Artemis too), Kafka refused for 30 s and blackholed for 45 s, a destination topic deleted and recreated
mid-stream, and Spark's JVM killed.
Each test prints what it measured (`-s`): sent, received, lost, duplicates. The brokers that a test
kills are its own, so that the session's brokers stay up for the other tests.

Kafka is cut mid-stream, once records flow, and once while the job starts its queries (after the start-up
checks, before the first micro-batch): the job waits both out with its patience (docs/outages.md).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from bridge_job.jms import detach_thread
from bridge_job.message import Destination, DestinationKind, JmsMessage, Property
from jmsbridge.artemis_server import ArtemisBroker
from jmsbridge.local import INACTIVITY_MS, BridgeJob, JmsBroker, jms_connection
from testbed.brokers import ActiveMqBroker, KafkaBroker, wait_until
from testbed.harness import (
    Received,
    bridge_document,
    deliveries,
    read_topics,
    route_document,
    send,
    variants,
    write_yaml,
)
from testbed.jms import send_built
from tests.support.poison_messages import POISON, good
from tests.support.providers import JmsProvider

pytestmark = pytest.mark.e2e

STOP_LINE = "jmsbridge stopped:"


@pytest.fixture
def own_activemq(request: pytest.FixtureRequest) -> Iterator[ActiveMqBroker | ArtemisBroker]:
    """A broker of the test's own (it is killed): ActiveMQ Classic, or Artemis for `url` "artemis"."""
    params = getattr(request.node, "callspec", None)
    artemis = params is not None and params.params.get("url") == "artemis"
    broker = ArtemisBroker() if artemis else ActiveMqBroker()
    yield broker.start()
    broker.cleanup()


def bridge_files(
    tmp_path: Path, activemq: JmsBroker, kafka: KafkaBroker, delivery: str = "atLeastOnce", **spec: Any
) -> tuple[list[Path], str, str]:
    """A bridge from a new queue to a new topic keyed by `seq`, dead letters to a DLQ: files, queue, topic."""
    n = uuid.uuid4().hex[:8]
    queue, topic = f"faults.{n}", f"faults-{n}"
    kafka.create_topics(topic, f"dlq-{n}")
    routing = {"onSoftFailure": "deadLetter", "deadLetterTopic": f"dlq-{n}"}
    bridge = bridge_document(
        f"faults-{n}", activemq, kafka, [{"queue": queue}], delivery=delivery, routing=routing, **spec
    )
    route = route_document("all", f"faults-{n}", topic, key={"property": "seq"})
    files = [write_yaml(tmp_path / "bridge.yaml", bridge), write_yaml(tmp_path / "routes.yaml", route)]
    return files, queue, topic


def counts(name: str, sent: range, records: list[Received]) -> tuple[set[int], int]:
    """(lost, duplicates) of the messages `sent` among `records` keyed by seq, printed for the report.

    A duplicate is a JMSMessageID written twice: the bridge's doing. The test producer may also send one
    seq twice (a send whose acknowledgement the broker's death swallowed), under two JMSMessageIDs:
    printed as resent, not counted as the bridge's.
    """
    seqs = Counter(int(r.key or b"-1") for r in records)
    ids = Counter(r.header("jms.JMSMessageID") for r in records)
    lost = set(sent) - set(seqs)
    duplicates = sum(n - 1 for n in ids.values())
    resent = sum(n - 1 for n in seqs.values()) - duplicates
    print(
        f"\n{name}: sent={len(sent)} received={len(records)} lost={len(lost)} duplicates={duplicates} "
        f"resent by the test producer={resent}"
    )
    return lost, duplicates


def all_of(sent: range) -> Callable[[list[Received]], bool]:
    return lambda records: {int(r.key or b"-1") for r in records} >= set(sent)


def numbered(queue: str, seq: int) -> JmsMessage:
    body = f"{seq:08d}".ljust(256, ".")
    return JmsMessage(
        Destination(DestinationKind.QUEUE, queue), body=body, properties={"seq": Property.of(seq)}
    )


class Sender:
    """A JMS producer thread sending `seq`-numbered persistent messages, reconnecting when the broker
    goes away (it resends the message whose send failed: the broker acknowledged none of it)."""

    def __init__(self, activemq: ActiveMqBroker | ArtemisBroker, queue: str, count: int) -> None:
        self.activemq, self.queue, self.count = activemq, queue, count
        self.acknowledged = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="jms-sender", daemon=True)

    def start(self) -> Sender:
        self.thread.start()
        return self

    def _run(self) -> None:
        try:
            while self.acknowledged < self.count:
                try:
                    with jms_connection(self.activemq) as connection, connection.producer() as producer:
                        while self.acknowledged < self.count:
                            producer.send(numbered(self.queue, self.acknowledged))
                            self.acknowledged += 1
                except Exception:
                    wait_until(lambda: self.activemq.alive(), 120, "ActiveMQ back", interval=0.5)
                    threading.Event().wait(0.5)
        except BaseException as error:
            self.error = error
        finally:
            detach_thread()

    def join(self) -> None:
        self.thread.join(timeout=600)
        assert self.error is None, self.error
        assert self.acknowledged == self.count


def stop_lines(job: BridgeJob) -> list[str]:
    return [line for line in job.log().splitlines() if STOP_LINE in line]


# One mode in the suite, both with JMSBRIDGE_ALL_MODES=1: tests/egress/test_interval.py
# dead-letters in both modes at the task's level.
@pytest.mark.parametrize("delivery", deliveries("exactlyOnce"))
def test_poison_messages_are_dead_lettered_and_good_ones_all_arrive(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path, delivery: str
) -> None:
    files, queue, topic = bridge_files(tmp_path, activemq, kafka, delivery)
    dead_letters = f"dlq-{topic.removeprefix('faults-')}"
    good_count, rounds = 200, 2
    builders = [good(seq) for seq in range(good_count)]
    for r in range(rounds):  # poison of every kind, twice, among the good ones
        for i, (build, _) in enumerate(POISON.values()):
            builders.insert(1 + (r * len(POISON) + i) * 20, build)
    job = BridgeJob(files, tmp_path).start()
    try:
        job.wait_running()
        send_built(activemq.url, queue, builders)
        records = read_topics(kafka, [topic], good_count, timeout=180, settle=2.0)
        letters = read_topics(kafka, [dead_letters], rounds * len(POISON), timeout=60, settle=1.0)
        assert job.process is not None and job.process.poll() is None, job.log()[-3000:]
    finally:
        job.stop()
    lost, duplicates = counts(f"poison ({delivery})", range(good_count), records)
    print(f"poison ({delivery}): poison={rounds * len(POISON)} dead-lettered={len(letters)}")
    assert not lost
    assert sorted(r.header("jmsbridge.deadletter.reason") or b"" for r in letters) == sorted(
        reason.encode() for _, reason in POISON.values() for _ in range(rounds)
    )
    if delivery == "exactlyOnce":
        assert duplicates == 0


# Killed and restarted (refused), or frozen (blackholed: accepted, never answered) for twice the
# connection's inactivity timeout (the test broker's 10 s, which the client's 30 s negotiates down to), so
# that both sides drop the connection. The
# failover transport's reconnection is met by the freeze, the bridge's own (a plain tcp URL) by the kill;
# a kill under the failover transport adds nothing to these two for the suite's budget (issue 18).
ACTIVEMQ_OUTAGES = [
    ("exactlyOnce", "failover", "frozen"),
    ("atLeastOnce", "tcp", "killed"),
    ("atLeastOnce", "artemis", "killed"),  # Artemis (its javax client, a login): the bridge reconnects
]
# The bridge's own reconnection under load is Artemis's case in the suite; Classic's plain tcp with
# JMSBRIDGE_ALL_MODES=1 (its lost connection is met in the suite by the patience test below).
SUITE_ACTIVEMQ_OUTAGES = [outage for outage in ACTIVEMQ_OUTAGES if outage[1] != "tcp"]


@pytest.mark.parametrize(("delivery", "url", "how"), variants(ACTIVEMQ_OUTAGES, SUITE_ACTIVEMQ_OUTAGES))
def test_activemq_unreachable_under_load_is_waited_out(
    own_activemq: ActiveMqBroker | ArtemisBroker,
    kafka: KafkaBroker,
    tmp_path: Path,
    delivery: str,
    url: str,
    how: str,
) -> None:
    spec: dict[str, Any] = {}
    env: dict[str, str] = {}
    if url == "artemis":
        provider = JmsProvider("artemis", own_activemq)
        spec["jms"], env = provider.jms(), provider.job_env()
    elif url == "tcp":
        broker_url = f"{own_activemq.url}?jms.redeliveryPolicy.maximumRedeliveries=-1"
        properties = {"properties": {"brokerURL": broker_url}}
        spec["jms"] = {
            "connectionFactory": {"className": "org.apache.activemq.ActiveMQConnectionFactory"} | properties
        }
    files, queue, topic = bridge_files(tmp_path, own_activemq, kafka, delivery, **spec)
    total = 3000
    job = BridgeJob(files, tmp_path, env=env).start()
    try:
        job.wait_running()
        sender = Sender(own_activemq, queue, total).start()
        wait_until(lambda: sender.acknowledged >= total // 3, 120, "a third of the messages sent")
        if how == "killed":
            own_activemq.kill()
            threading.Event().wait(5)  # down for a while: the job must not give up
            own_activemq.start()
        else:
            own_activemq.freeze()
            threading.Event().wait(2 * INACTIVITY_MS / 1000)
            own_activemq.thaw()
        sender.join()
        records = read_topics(kafka, [topic], total, timeout=300, settle=3.0, done=all_of(range(total)))
        assert job.process is not None and job.process.poll() is None, job.log()[-3000:]
        assert stop_lines(job) == []
    finally:
        job.stop()
    lost, duplicates = counts(f"ActiveMQ {how} ({delivery}, {url})", range(total), records)
    assert not lost
    if delivery == "exactlyOnce":
        assert duplicates == 0


def test_activemq_gone_for_longer_than_the_patience_stops_with_one_line(
    own_activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    """A plain tcp URL: the lost connection is retried for spec.outages.patienceSeconds, then a clean stop."""
    properties = {"brokerURL": own_activemq.url}
    factory = {"className": "org.apache.activemq.ActiveMQConnectionFactory", "properties": properties}
    spec: dict[str, Any] = {"jms": {"connectionFactory": factory}, "outages": {"patienceSeconds": 10}}
    files, queue, topic = bridge_files(tmp_path, own_activemq, kafka, **spec)
    job = BridgeJob(files, tmp_path).start()
    try:
        job.wait_running()
        send(own_activemq, [numbered(queue, 0)])
        read_topics(kafka, [topic], 1, timeout=180)  # flowing (see the module docstring)
        own_activemq.kill()
        job.wait_log("reconnecting (attempt 1,", 60)
        assert job.wait_exit(120) == 2
    finally:
        job.kill()
    lines = stop_lines(job)
    print(f"\nActiveMQ gone: {lines}")
    assert len(lines) == 1
    assert "unreachable for 1" in lines[0] and "spec.outages.patienceSeconds=10" in lines[0]
    assert job.log().count("reconnecting (attempt") <= 2  # rate-limited: one line per 10 s


# Refused (the broker stopped, its port closed) and blackholed (the broker frozen: connections accepted,
# nothing answered, so every client call runs into its timeout). One mode each keeps the suite's budget;
# the blackhole outlasts every single client timeout of the job (30 s), so only the patience bridges it.
OUTAGES = [("atLeastOnce", "refused", 30.0), ("exactlyOnce", "blackholed", 45.0)]


@pytest.mark.parametrize(("delivery", "how", "seconds"), OUTAGES)
def test_kafka_unreachable_mid_stream_is_waited_out(
    activemq: ActiveMqBroker, own_kafka: KafkaBroker, tmp_path: Path, delivery: str, how: str, seconds: float
) -> None:
    """A quarter sent before, half during and a quarter after the outage; the job never stops, and the
    bridge's health report says Kafka was unreachable and is back."""
    files, queue, topic = bridge_files(tmp_path, activemq, own_kafka, delivery)
    total = 2000
    job = BridgeJob(files, tmp_path).start()
    try:
        job.wait_running()
        send(activemq, [numbered(queue, seq) for seq in range(total // 4)])
        read_topics(own_kafka, [topic], 1, timeout=180)  # flowing (see the module docstring)
        # refused: the port closed (connections refused at once); else frozen (a blackhole: timeouts)
        refused = how == "refused"
        cut, restore = (own_kafka.stop, own_kafka.start) if refused else (own_kafka.freeze, own_kafka.thaw)
        cut()
        down_at = time.monotonic()
        send(activemq, [numbered(queue, seq) for seq in range(total // 4, total * 3 // 4)])
        job.wait_log("(attempt 1, failing for", 90)  # the outage is seen, and said once per interval
        threading.Event().wait(max(0.0, seconds - (time.monotonic() - down_at)))
        restore()
        send(activemq, [numbered(queue, seq) for seq in range(total * 3 // 4, total)])
        records = read_topics(own_kafka, [topic], total, timeout=300, settle=3.0, done=all_of(range(total)))
        assert job.process is not None and job.process.poll() is None, job.log()[-3000:]
        assert stop_lines(job) == []  # it never stopped
        assert "back after" in job.log()  # the outage's end is said too
    finally:
        job.stop()
    assert job.process.returncode == 0 and stop_lines(job) == [], job.log()[-3000:]  # a clean stop
    # librdkafka's lines, the tasks' in Spark's Python workers included, all go through the job's
    # (redacting) log format rather than straight to stderr
    complaints = [line for line in job.log().splitlines() if "rdkafka#" in line or "brokers are down" in line]
    assert complaints and all(" jmsbridge.kafka: " in line for line in complaints), "\n".join(complaints)
    lost, duplicates = counts(f"Kafka {how} {seconds:.0f} s ({delivery})", range(total), records)
    assert not lost
    if delivery == "exactlyOnce":
        assert duplicates == 0


def test_kafka_blackholed_while_the_job_starts_is_waited_out(
    activemq: ActiveMqBroker, own_kafka: KafkaBroker, tmp_path: Path
) -> None:
    """Cut as the queries start, before their first micro-batch (planned with Kafka gone) and before the
    ingest's first journal write."""
    files, queue, topic = bridge_files(tmp_path, activemq, own_kafka)
    job = BridgeJob(files, tmp_path).start()
    try:
        job.wait_running()  # the queries are starting; no batch has run yet (nothing was sent)
        own_kafka.freeze()
        cut = time.monotonic()
        send(activemq, [numbered(queue, seq) for seq in range(100)])
        job.wait_log("(attempt 1, failing for", 90)  # waiting (a blackhole shows after a call's timeout)
        threading.Event().wait(max(0.0, 40 - (time.monotonic() - cut)))
        own_kafka.thaw()
        records = read_topics(own_kafka, [topic], 100, timeout=300, settle=3.0, done=all_of(range(100)))
        assert stop_lines(job) == [], job.log()[-3000:]
    finally:
        job.stop()
    lost, _ = counts("Kafka blackholed at start", range(100), records)
    assert not lost


@pytest.mark.parametrize("delivery", deliveries("exactlyOnce"))  # the transactional path (issue 18)
def test_destination_topic_deleted_and_recreated(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path, delivery: str
) -> None:
    """Deleting the topic is a hard failure (the job stops, naming it); recreated and restarted, the job
    carries on. What the deleted topic held is gone with it: counted, not asserted."""
    files, queue, topic = bridge_files(tmp_path, activemq, kafka, delivery)
    total = 1500
    first, second = range(total // 3), range(total // 3, total * 2 // 3)
    job = BridgeJob(files, tmp_path).start()
    try:
        job.wait_running()
        send(activemq, [numbered(queue, seq) for seq in first])
        read_topics(kafka, [topic], len(first), timeout=180)
        kafka.delete_topics(topic)
        send(activemq, [numbered(queue, seq) for seq in second])
        code = job.wait_exit(180)
        lines = stop_lines(job)
        print(f"\ntopic deleted: exit={code} stop lines={lines}")
        assert code == 2 and len(lines) == 1 and f"topic {topic} does not exist" in lines[0]
        kafka.create_topics(topic)
        job.start()
        job.wait_running()
        send(activemq, [numbered(queue, seq) for seq in range(second.stop, total)])
        after = range(second.start, total)
        records = read_topics(kafka, [topic], len(after), timeout=300, settle=3.0, done=all_of(after))
    finally:
        job.stop()
    lost, duplicates = counts(f"topic deleted and recreated ({delivery})", range(total), records)
    print(f"topic deleted and recreated ({delivery}): lost with the deleted topic={len(lost & set(first))}")
    assert not lost - set(first), "every message sent after the deletion arrives"
    if delivery == "exactlyOnce":
        assert duplicates == 0


def test_spark_jvm_killed_ends_in_one_stop_line(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    files, _, _ = bridge_files(tmp_path, activemq, kafka)
    job = BridgeJob(files, tmp_path).start()
    try:
        job.wait_running()
        assert job.process is not None
        spark_jvms = [
            p for p in psutil.Process(job.process.pid).children(recursive=True)
            if p.name() == "java" and any("SparkSubmit" in part for part in p.cmdline())
        ]  # fmt: skip
        assert len(spark_jvms) == 1
        spark_jvms[0].kill()
        assert job.wait_exit(120) == 2
    finally:
        job.kill()
    lines = stop_lines(job)
    print(f"\nSpark JVM killed: {lines}")
    assert len(lines) == 1
    assert "Spark's JVM stopped answering" in lines[0]
