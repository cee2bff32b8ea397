"""JMS -> Kafka end to end: a real JMS producer, ActiveMQ, the job with real Spark, Apache Kafka.

Each test runs `jmsbridge job` as a process on YAML written like a user's, and checks what a Kafka
consumer sees: topics, keys, headers with types intact, dead letters, and how the job stops.
"""

from __future__ import annotations

import itertools
import json
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bridge_job.formats import KafkaRecord, native
from bridge_job.formats.journal import journal_partition
from bridge_job.message import BodyType, Destination, DestinationKind, JmsMessage, Property, PropertyType
from jmsbridge.local import BridgeJob
from testbed.brokers import ActiveMqBroker, KafkaBroker, free_port, wait_until
from testbed.harness import bridge_document, read_topics, route_document, send, write_yaml

pytestmark = pytest.mark.e2e


@pytest.fixture
def names() -> Iterator[str]:
    yield uuid.uuid4().hex[:8]


def queue(name: str) -> Destination:
    return Destination(DestinationKind.QUEUE, name)


def metric(port: int, bridge: str, outcome: str) -> float | None:
    """`jmsbridge_routed_messages_total` from the job's Prometheus endpoint."""
    return sample(port, "jmsbridge_routed_messages_total", {"bridge": bridge, "outcome": outcome})


def sample(port: int, name: str, labels: dict[str, str]) -> float | None:
    """A sample of the job's Prometheus endpoint, scraped over HTTP."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return float(found.value)
    return None


def decoded(record: object) -> JmsMessage:
    r = record
    return native.decode(KafkaRecord(value=r.value, headers=r.headers, key=r.key))  # type: ignore[attr-defined]


def test_routes_keys_and_typed_headers(activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path) -> None:
    n = uuid.uuid4().hex[:8]
    orders, payments, other, prices = f"orders.{n}.in", f"payments.{n}.eu", f"misc.{n}", f"prices.{n}"
    t_priority, t_orders, t_payments, t_default = (
        f"{t}-{n}" for t in ("priority", "orders", "payments", "rest")
    )
    kafka.create_topics(t_priority, t_orders, t_payments, t_default)
    sources: list[dict[str, object]] = [{"queue": orders}, {"queue": payments}, {"queue": other}]
    sources.append({"topic": prices, "durableSubscription": f"bridge-{n}"})
    bridge = bridge_document(f"e2e-{n}", activemq, kafka, sources)
    routes = [
        route_document("priority", f"e2e-{n}", t_priority, order=1,
                       match={"address": orders, "headers": {"JMSType": "priority"}},
                       key={"header": "JMSCorrelationID"}),
        route_document("orders", f"e2e-{n}", t_orders, order=2, match={"address": orders},
                       key={"property": "customerId"}),
        route_document("payments", f"e2e-{n}", t_payments, order=3, match={"address": f"payments.{n}.*"}),
        route_document("default", f"e2e-{n}", t_default, order=100),
    ]  # fmt: skip
    files = [write_yaml(tmp_path / "bridge.yaml", bridge), write_yaml(tmp_path / "routes.yaml", *routes)]
    job = BridgeJob(files, tmp_path).start()
    try:
        job.wait_running()
        typed = {
            "customerId": Property(PropertyType.LONG, 2**40),
            "flag": Property(PropertyType.BOOLEAN, True),
            "b": Property(PropertyType.BYTE, -128),
            "s": Property(PropertyType.SHORT, 32767),
            "i": Property(PropertyType.INT, -5),
            "f": Property(PropertyType.FLOAT, 1.5),
            "d": Property(PropertyType.DOUBLE, 0.1),
            "text": Property.string("héllo"),
        }
        sent = send(
            activemq,
            [
                JmsMessage(
                    queue(orders), body="rush", type="priority", correlation_id="c-1", properties=typed
                ),
                JmsMessage(queue(orders), body="normal", type="normal", properties=typed),
                JmsMessage(queue(payments), BodyType.BYTES, body=b"\x00\x01\xff", priority=7),
                JmsMessage(queue(other), body="leftover"),
                JmsMessage(Destination(DestinationKind.TOPIC, prices), body="EURUSD 1.08"),
            ],
        )
        records = read_topics(kafka, [t_priority, t_orders, t_payments, t_default], 5, settle=1.0)
    finally:
        job.stop()
    by_topic = {r.topic: r for r in records if r.value != b"EURUSD 1.08"}
    assert len(records) == 5 and set(by_topic) == {t_priority, t_orders, t_payments, t_default}
    (price,) = [r for r in records if r.value == b"EURUSD 1.08"]
    assert price.topic == t_default and price.header("jms.JMSDestination") == f"topic://{prices}".encode()

    rush = by_topic[t_priority]
    assert rush.key == b"c-1" and rush.value == b"rush"
    assert rush.header("jmsbridge.origin") == f"e2e-{n}".encode()
    assert rush.header("jms.JMSMessageID") == sent[0].encode()
    message = decoded(rush)
    assert message.properties == typed  # every type recovered
    assert message.type == "priority" and message.destination == queue(orders)

    assert by_topic[t_orders].key == str(2**40).encode()
    payment = by_topic[t_payments]
    assert payment.value == b"\x00\x01\xff" and payment.key == sent[2].encode()
    assert decoded(payment).body_type is BodyType.BYTES and decoded(payment).priority == 7
    assert by_topic[t_default].value == b"leftover"


def test_skip_and_dead_letter_policies_and_route_reload(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    """Also: the metrics count while the task runs (its interval outlasts the test: spark/live.py)."""
    n = uuid.uuid4().hex[:8]
    source, topic, dlq, later = f"policy.{n}", f"keyed-{n}", f"dlq-{n}", f"later-{n}"
    kafka.create_topics(topic, dlq, later)
    bridge = bridge_document(
        f"pol-{n}", activemq, kafka, [{"queue": source}],
        routing={"deadLetterTopic": dlq, "onSoftFailure": "deadLetter"},
        spark={"taskIntervalSeconds": 3600},
    )  # fmt: skip
    routes_file = tmp_path / "routes.yaml"
    keyed = route_document(
        "keyed", f"pol-{n}", topic, order=1, match={"headers": {"kind": "keyed"}}, key={"property": "orderId"}
    )
    skipping = route_document("skipping", f"pol-{n}", topic, order=2, match={"headers": {"kind": "skip"}},
                              key={"property": "orderId"}, onSoftFailure="skip")  # fmt: skip
    files = [write_yaml(tmp_path / "bridge.yaml", bridge), write_yaml(routes_file, keyed, skipping)]
    job = BridgeJob(files, tmp_path, metrics_port=free_port()).start()
    try:
        job.wait_running()

        def kind(k: str, **p: Property) -> dict[str, Property]:
            return {"kind": Property.string(k), **p}

        send(
            activemq,
            [
                JmsMessage(queue(source), body="no key", properties=kind("keyed")),  # NoKey -> dead letter
                JmsMessage(queue(source), body="skipped", properties=kind("skip")),  # NoKey -> skipped
                JmsMessage(queue(source), body="unrouted", properties=kind("none")),  # NoRoute -> dead letter
                JmsMessage(
                    queue(source), body="ok", properties=kind("keyed", orderId=Property.string("o-1"))
                ),
            ],
        )
        records = read_topics(kafka, [topic, dlq], 3, settle=2.0)
        by_body = {r.value: r for r in records}
        assert set(by_body) == {b"no key", b"unrouted", b"ok"}  # the skipped one is nowhere
        assert by_body[b"ok"].topic == topic and by_body[b"ok"].key == b"o-1"
        assert by_body[b"no key"].topic == dlq
        assert by_body[b"no key"].header("jmsbridge.deadletter.reason") == b"NoKey"
        assert by_body[b"no key"].header("jmsbridge.deadletter.route") == b"keyed"
        assert by_body[b"unrouted"].header("jmsbridge.deadletter.reason") == b"NoRoute"
        assert by_body[b"unrouted"].header("jmsbridge.deadletter.source") == f"queue://{source}".encode()
        assert "skipped message" in job.log() and "NoKey" in job.log()
        counts = {"deadLettered": 2, "skipped": 1, "published": 1}
        wait_until(
            lambda: all(metric(job.metrics_port, f"pol-{n}", k) == v for k, v in counts.items()),
            30,
            "routing counts on the Prometheus endpoint",
        )
        assert " batch {" not in job.log()  # no interval has ended: the counts came live
        task = {"bridge": f"pol-{n}", "query": "egress", "task": "0", "state": "idle"}
        wait_until(lambda: sample(job.metrics_port, "jmsbridge_task_state", task) == 1, 30, "an idle task")

        # A route added while the job runs takes effect without a restart.
        catch_all = route_document("later", f"pol-{n}", later, order=50)
        write_yaml(routes_file, keyed, skipping, catch_all)
        wait_until(lambda: "routes reloaded" in job.log(), 30, "the job to reload its routes")
        send(activemq, [JmsMessage(queue(source), body="after reload", properties=kind("none"))])
        assert [r.value for r in read_topics(kafka, [later], 1)] == [b"after reload"]
        assert job.process is not None and job.process.poll() is None
    finally:
        job.stop()


def test_fail_policy_stops_the_job_with_a_clear_message(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    n = uuid.uuid4().hex[:8]
    source, topic = f"strict.{n}", f"strict-{n}"
    kafka.create_topics(topic)
    bridge = bridge_document(f"strict-{n}", activemq, kafka, [{"queue": source}])
    route = route_document("only-text", f"strict-{n}", topic, match={"headers": {"JMSType": "text"}})
    files = [write_yaml(tmp_path / "bridge.yaml", bridge), write_yaml(tmp_path / "routes.yaml", route)]
    job = BridgeJob(files, tmp_path).start()
    try:
        job.wait_running()
        send(activemq, [JmsMessage(queue(source), body="nobody routes me", message_id=None)])
        assert job.wait_exit() == 2
    finally:
        job.stop()
    stopped = [line for line in job.log().splitlines() if "jmsbridge stopped:" in line]
    assert stopped, job.log()[-3000:]
    assert "NoRoute" in stopped[-1] and "policy fail" in stopped[-1] and f"queue://{source}" in stopped[-1]


def test_missing_topic_stops_the_job_naming_it(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    n = uuid.uuid4().hex[:8]
    bridge = bridge_document(f"missing-{n}", activemq, kafka, [{"queue": f"m.{n}"}])
    route = route_document("nowhere", f"missing-{n}", f"no-such-topic-{n}")
    files = [write_yaml(tmp_path / "bridge.yaml", bridge), write_yaml(tmp_path / "routes.yaml", route)]
    job = BridgeJob(files, tmp_path).start()
    assert job.wait_exit() == 2
    assert f"topic no-such-topic-{n} does not exist" in job.log()


def batch_figures(log: str) -> list[dict[str, Any]]:
    """The per-batch JSON lines the job logs."""
    return [json.loads(line.split(" batch ", 1)[1]) for line in log.splitlines() if " batch {" in line]


def test_journal_partitions_run_side_by_side_and_keep_order_per_destination(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    n = uuid.uuid4().hex[:8]
    # Two queues whose messages land in different journal partitions (partitioned by destination).
    candidates = (f"par.{n}.{i}" for i in itertools.count())
    by_partition: dict[int, str] = {}
    while len(by_partition) < 2:
        name = next(candidates)
        by_partition.setdefault(journal_partition(JmsMessage(queue(name)), 2), name)
    sources, topic = list(by_partition.values()), f"par-{n}"
    kafka.create_topics(topic)
    bridge = bridge_document(
        f"par-{n}", activemq, kafka, [{"queue": s} for s in sources],
        spark={"maxRecordsPerBatch": 1000, "taskIntervalSeconds": 5},
    )  # fmt: skip
    bridge["spec"]["kafka"]["journalPartitions"] = 2
    route = route_document("all", f"par-{n}", topic, key={"property": "seq"})
    files = [write_yaml(tmp_path / "bridge.yaml", bridge), write_yaml(tmp_path / "routes.yaml", route)]
    per_source = 3000
    # Both queues filled before the job starts, so that every batch has records in both partitions.
    for source in sources:
        send(activemq, [JmsMessage(queue(source), body="x" * 200, properties={"seq": Property.of(i)})
                        for i in range(per_source)])  # fmt: skip
    job = BridgeJob(files, tmp_path).start()
    try:
        records = read_topics(kafka, [topic], 2 * per_source, timeout=240)
        # An interval's row comes when its tasks return (taskIntervalSeconds).
        wait_until(lambda: any(b["tasks"] == 2 for b in batch_figures(job.log())), 120, "an interval's row")
    finally:
        job.stop()
    for source in sources:
        seqs = [
            int(r.key or b"-1")
            for r in records
            if r.header("jms.JMSDestination") == f"queue://{source}".encode()
        ]
        assert seqs == list(range(per_source)), f"{source}: out of order or incomplete"
    both = [b for b in batch_figures(job.log()) if b["tasks"] == 2]
    assert both, f"no batch ran a task per journal partition: {batch_figures(job.log())}"
    # Task time over the span of the batch's tasks: above 1 only if the two tasks overlapped.
    assert max(b["parallelism"] for b in both) > 1.2, both
