"""Forged bridge marks on real brokers (security issue 43): nats-server, Apache Kafka, ActiveMQ and the job.

The attacker may publish on NATS and produce to the bridge's topics, nothing more. It publishes answers
to the bridge's NATS reply subjects naming a queue of its choice (an unsigned subject of the old form, a
MAC it made up, a genuine MAC over a payload it altered), a signed one naming a route that is no
jmsToNats route and a signed one that expired (a subject replayed after its requester stopped waiting):
nothing arrives on that queue, each is counted (`unknown_replies` of no route), and the genuine
request/reply still answers. It writes the bridge's loop mark (`jmsbridge.origin` and
`jms.JMSDestination`) on Kafka records and NATS messages, and as a plain JMS producer the ingress's
(`JmsBridgeOrigin` and `KafkaTopic`) on JMS messages, to make the bridge drop them: they are delivered,
while what the bridge itself wrote from a destination is still dropped as a loop.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import nats
import pytest
from confluent_kafka import Producer

from bridge_job.message import Destination, DestinationKind, JmsMessage, Property
from bridge_job.routing.nats_replies import WayBack, reply_subject
from bridge_job.signing import bridge_key
from jmsbridge.local import BridgeJob, JmsRequester
from testbed.brokers import ActiveMqBroker, KafkaBroker, NatsServer, free_port, wait_until
from testbed.harness import (
    bridge_document,
    queued,
    read_topics,
    received_from,
    route_document,
    send,
    to_jms_route,
    write_yaml,
)
from tests.support.nats_service import nats_service

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("forged-marks")]


@dataclass
class Bridge:
    job: BridgeJob
    id: str
    n: str  # this module's subjects, topics and queues carry it
    nats_url: str

    def metric(self, name: str, **labels: str) -> float:
        """A sample of the job's Prometheus endpoint (0 when absent or not served yet)."""
        from prometheus_client.parser import text_string_to_metric_families

        try:
            url = f"http://127.0.0.1:{self.job.metrics_port}/metrics"
            with urllib.request.urlopen(url, timeout=5) as response:
                text = response.read().decode()
        except urllib.error.URLError:
            return 0.0
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and sample.labels == {"bridge": self.id, **labels}:
                    return float(sample.value)
        return 0.0


def a_route(name: str, bridge: str, **spec: object) -> dict[str, Any]:
    return {
        "apiVersion": "jmsbridge.dev/v1alpha1",
        "kind": "JmsBridgeRoute",
        "metadata": {"name": name},
        "spec": {"bridgeRef": {"name": bridge}, **spec},
    }


def to_nats(name: str, bridge: str, queue: str, subject: str) -> dict[str, Any]:
    return a_route(name, bridge, direction="jmsToNats", match={"address": queue}, natsSubject=subject)


def from_nats(name: str, bridge: str, subject: str, queue: str) -> dict[str, Any]:
    return a_route(name, bridge, direction="natsToJms", natsSubject=subject, jmsDestination={"queue": queue})


@pytest.fixture(scope="module")
def bridge(
    activemq: ActiveMqBroker, kafka: KafkaBroker, nats: NatsServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Bridge]:
    work = tmp_path_factory.mktemp("forged")
    n = uuid.uuid4().hex[:8]
    name = f"forged-{n}"
    kafka.create_topics(f"kin-{n}", f"kloop-{n}", f"jin-{n}")
    sources = [{"queue": f"ask.{n}"}, {"queue": f"nloop.{n}"}, {"queue": f"kloop.{n}"}, {"queue": f"jin.{n}"}]
    document = bridge_document(name, activemq, kafka, sources, nats={"servers": [nats.url]})
    routes = [
        # JMS requesters -> a NATS service
        to_nats("ask", name, f"ask.{n}", f"ask.{n}.svc"),
        # where forged loop marks are written: from NATS and from Kafka to queues no route reads
        from_nats("nin", name, f"nin.{n}", f"nin.{n}"),
        to_jms_route("kin", name, f"kin-{n}", {"queue": f"kin.{n}"}),
        # and by a JMS producer, on a source queue whose route writes to the topic the mark names
        route_document("jin", name, f"jin-{n}", match={"address": f"jin.{n}"}),
        # genuine loops: a queue to NATS and back, a queue to Kafka and back
        to_nats("nloop-out", name, f"nloop.{n}", f"nloop.{n}"),
        from_nats("nloop-in", name, f"nloop.{n}", f"nloop.{n}"),
        route_document("kloop-out", name, f"kloop-{n}", match={"address": f"kloop.{n}"}),
        to_jms_route("kloop-in", name, f"kloop-{n}", {"queue": f"kloop.{n}"}),
    ]
    for order, route in enumerate(routes):
        route["spec"]["order"] = order
    files = [write_yaml(work / "bridge.yaml", document, *routes)]
    job = BridgeJob(files, work, metrics_port=free_port()).start()
    try:
        job.wait_log("subscribed to NATS subject", timeout=180)
        yield Bridge(job, name, n, nats.url)
    finally:
        job.stop()


def late_loops(log: str, route: str) -> int:
    """Loops a NATS service dropped after its last task, when the next task ran in another Spark worker
    and none came back to its own: said in the log when it closes, not in the metrics (a known gap)."""
    lines = [line.partition("nats counts no task reported ")[2] for line in log.splitlines()]
    return sum(int(row["loops"]) for row in map(json.loads, filter(None, lines)) if row["route"] == route)


def publish(url: str, messages: list[tuple[str, bytes, dict[str, str] | None]]) -> None:
    async def run() -> None:
        client = await nats.connect(url)
        try:
            for subject, data, headers in messages:
                await client.publish(subject, data, headers=headers)
            await client.flush()
        finally:
            await client.close()

    asyncio.run(run())


def token(fields: dict[str, str]) -> str:
    """A way back as the bridge encodes one (routing/nats_replies.py), written by hand."""
    return base64.urlsafe_b64encode(json.dumps(fields).encode()).rstrip(b"=").decode()


def test_forged_answers_reach_no_queue_and_are_counted(bridge: Bridge, activemq: ActiveMqBroker) -> None:
    n, victim = bridge.n, f"victim.{bridge.n}"
    seen: list[str] = []
    requester = JmsRequester(activemq, f"ask.{n}")
    try:
        with nats_service(lambda: nats.connect(bridge.nats_url), f"ask.{n}.svc", seen):
            requester.request("q1", "c-1")
            assert requester.reply(timeout_ms=120_000) == ("c-1", "re: q1")
            prefix, genuine_mac, _ = seen[0].rsplit(".", 2)
            assert prefix == f"_JMSBRIDGE.{bridge.id}.reply"
            to_victim = token({"to": f"queue://{victim}", "c": "c-1", "r": "ask"})
            victim_queue = Destination(DestinationKind.QUEUE, victim)
            forged = [
                f"{prefix}.{to_victim}",  # unsigned, as before reply subjects were signed
                f"{prefix}.{'A' * 22}.{to_victim}",  # a MAC made up
                f"{prefix}.{genuine_mac}.{to_victim}",  # a genuine MAC, the payload altered
                # signed (as only the bridge's key can), its route a natsToJms route: no requester's
                reply_subject(
                    bridge.id, WayBack(victim_queue, "c-1", "nin"), bridge_key(), int(time.time()) + 3600
                ),
                # signed, for a jmsToNats route, replayed an hour after it expired
                reply_subject(
                    bridge.id, WayBack(victim_queue, "c-1", "ask"), bridge_key(), int(time.time()) - 3600
                ),
            ]
            publish(bridge.nats_url, [(subject, b"written by the attacker", None) for subject in forged])

            def dropped() -> float:
                return bridge.metric("jmsbridge_nats_messages_total", route="-", outcome="unknown_replies")

            wait_until(lambda: dropped() == len(forged), 120, "the forged answers counted as dropped")
            assert queued(activemq, victim, quiet=2.0) == []
            requester.request("q2", "c-2")  # the genuine way back still answers
            assert requester.reply(timeout_ms=120_000) == ("c-2", "re: q2")
    finally:
        requester.close()
    log = bridge.job.log()
    assert "dropped answers on the NATS reply subjects" in log
    assert "written by the attacker" not in log
    assert bridge.metric("jmsbridge_nats_messages_total", route="ask", outcome="answered") >= 1


def loop_mark(bridge: Bridge, queue: str) -> dict[str, str]:
    """The headers of a loop mark, as the attacker copies them from a record the bridge wrote."""
    return {"jmsbridge.origin": bridge.id, "jms.JMSDestination": f"queue://{queue}"}


def test_a_forged_loop_mark_on_kafka_is_delivered(
    bridge: Bridge, kafka: KafkaBroker, activemq: ActiveMqBroker
) -> None:
    mark = loop_mark(bridge, f"kin.{bridge.n}")
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    producer.produce(f"kin-{bridge.n}", b"no mac", headers={**mark})
    producer.produce(f"kin-{bridge.n}", b"a wrong mac", headers={**mark, "jmsbridge.origin.mac": "A" * 22})
    assert producer.flush(30) == 0
    delivered = received_from(activemq, f"kin.{bridge.n}", 2)
    assert sorted(str(m.body) for m in delivered) == ["a wrong mac", "no mac"]
    bridge.job.wait_log("not dropped as loops", timeout=60)


def test_a_forged_loop_mark_on_nats_is_delivered(bridge: Bridge, activemq: ActiveMqBroker) -> None:
    mark = loop_mark(bridge, f"nin.{bridge.n}")
    wrong = mark | {"jmsbridge.origin.mac": "A" * 22}
    publish(
        bridge.nats_url, [(f"nin.{bridge.n}", b"no mac", mark), (f"nin.{bridge.n}", b"a wrong mac", wrong)]
    )
    delivered = received_from(activemq, f"nin.{bridge.n}", 2)
    assert [m.body for m in delivered] == ["no mac", "a wrong mac"]


def test_a_forged_loop_mark_on_jms_is_published(
    bridge: Bridge, kafka: KafkaBroker, activemq: ActiveMqBroker
) -> None:
    """As the ingress marks what it sends from topic `jin-<n>`: the egress would drop it as a loop."""
    n, claim = bridge.n, {"JmsBridgeOrigin": bridge.id, "KafkaTopic": f"jin-{bridge.n}"}
    wrong = claim | {"JmsBridgeOriginMac": "A" * 22}
    forged = [("no mac", claim), ("a wrong mac", wrong)]
    jin = Destination(DestinationKind.QUEUE, f"jin.{n}")
    send(
        activemq,
        [
            JmsMessage(jin, body=b, properties={k: Property.string(v) for k, v in p.items()})
            for b, p in forged
        ],
    )
    records = read_topics(kafka, [f"jin-{n}"], 2)
    assert sorted(r.value or b"" for r in records) == [b"a wrong mac", b"no mac"]
    bridge.job.wait_log("were sent on, not dropped as loops", timeout=60)


def test_what_the_bridge_wrote_from_a_queue_is_still_a_loop(bridge: Bridge, activemq: ActiveMqBroker) -> None:
    n = bridge.n
    send(activemq, [JmsMessage(Destination(DestinationKind.QUEUE, f"kloop.{n}"), body="to kafka and back?")])
    send(activemq, [JmsMessage(Destination(DestinationKind.QUEUE, f"nloop.{n}"), body="to nats and back?")])

    def loops() -> tuple[float, float]:
        kafka = bridge.metric("jmsbridge_ingress_records_total", outcome="loop")
        nats = bridge.metric("jmsbridge_nats_messages_total", route="nloop-in", outcome="loops")
        return kafka, nats + late_loops(bridge.job.log(), "nloop-in")

    seen: list[tuple[float, float]] = []

    def one_each() -> bool:
        seen[:] = [loops()]
        return seen[0] == (1.0, 1.0)

    # Two trips through the journal and back: minutes on a loaded machine (120 s ran out in the suite).
    try:
        wait_until(one_each, 240, "one loop stopped on Kafka, one on NATS")
    except TimeoutError as error:
        raise AssertionError(f"{error}; counted (kafka, nats) = {seen[0]}") from None
