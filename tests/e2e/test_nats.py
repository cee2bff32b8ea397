"""NATS -> JMS on real brokers: nats-server, ActiveMQ and the job on local Spark (docs/nats.md).

One bridge serves the module: NATS requesters get their answers from a JMS service of either convention,
one-way messages arrive in order, a JMS service that never answers makes the requests time out with a
408 status, and a NATS server restarted mid-stream is waited out. The NATS clients are nats-py's, as a
NATS application would write them.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import nats
import pytest
from nats.aio.msg import Msg

from jmsbridge.local import BridgeJob
from tests.brokers import ActiveMqBroker, KafkaBroker, NatsServer
from tests.support.harness import bridge_document, received_from, write_yaml
from tests.support.jms_services import serving

# One worker runs the module, so that its one bridge job serves every test of it.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("nats")]


@dataclass
class NatsBridge:
    job: BridgeJob
    nats: NatsServer
    n: str  # this module's subjects and queues carry it


def nats_route(name: str, bridge: str, subject: str, queue: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "jmsbridge.dev/v1alpha1",
        "kind": "JmsBridgeRoute",
        "metadata": {"name": name},
        "spec": {
            "bridgeRef": {"name": bridge},
            "direction": "natsToJms",
            "natsSubject": subject,
            "jmsDestination": {"queue": queue},
            **spec,
        },
    }


@pytest.fixture(scope="module")
def bridge(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NatsBridge]:
    server = NatsServer().start()  # this module's own: one test restarts it
    n = uuid.uuid4().hex[:8]
    work = tmp_path_factory.mktemp("nats")
    name = f"nats-{n}"
    document = bridge_document(
        name, activemq, kafka, [{"queue": f"unused.{n}"}], nats={"servers": [server.url]}
    )
    files = [
        write_yaml(
            work / "bridge.yaml",
            document,
            nats_route("requests", name, f"svc.{n}.>", f"svc.{n}", order=1),
            nats_route("silent", name, f"silent.{n}", f"silent.{n}", order=2, timeoutSeconds=2),
            nats_route("events", name, f"events.{n}.*", f"events.{n}", order=3),
            nats_route("enveloped", name, f"env.{n}", f"env.{n}", order=4, format="envelope"),
        )
    ]
    job = BridgeJob(files, work).start()
    try:
        job.wait_log("subscribed to NATS subject env.", timeout=180)
        yield NatsBridge(job, server, n)
    finally:
        job.stop()
        server.cleanup()


async def _requests(url: str, subject: str, texts: list[str], headers: dict[str, str]) -> list[Msg]:
    client = await nats.connect(url)
    try:
        return [await client.request(subject, t.encode(), timeout=60, headers=headers) for t in texts]
    finally:
        await client.close()


def test_nats_requesters_get_their_answers_from_a_jms_service(
    bridge: NatsBridge, activemq: ActiveMqBroker
) -> None:
    """Three requesters side by side, 1,000 requests; half are answered by the message-id convention."""
    n = bridge.n

    async def three() -> list[list[Msg]]:
        asks = []
        for who in range(3):
            texts = [f"{who}.{i}" for i in range(334 if who < 2 else 332)]
            headers = {
                "jms.count": str(who),
                "jmsbridge.types": "count=int",
                "jms.convention": "messageId" if who % 2 else "correlationId",
            }
            asks.append(_requests(bridge.nats.url, f"svc.{n}.orders", texts, headers))
        return list(await asyncio.gather(*asks))

    with serving(activemq, f"svc.{n}"):
        answers = asyncio.run(three())
    assert sum(len(a) for a in answers) == 1000
    for who, got in enumerate(answers):
        assert [m.data.decode() for m in got] == [f"re: {who}.{i}" for i in range(len(got))]
        first = got[0].headers or {}
        assert first["jms.count"] == str(who)  # a property, int on the JMS side and back
        assert "count=int" in first["jmsbridge.types"]
        assert first["jms.NatsSubject"] == f"svc.{n}.orders"


def test_a_request_no_jms_service_answers_gets_a_timeout_status(bridge: NatsBridge) -> None:
    async def ask() -> Msg:
        client = await nats.connect(bridge.nats.url)
        try:
            return await client.request(f"silent.{bridge.n}", b"anyone?", timeout=30)
        finally:
            await client.close()

    reply = asyncio.run(ask())
    headers = reply.headers or {}
    assert headers.get("Status") == "408", headers
    assert "no answer from JMS within 2s (route silent" in headers["Jmsbridge-Error"]
    bridge.job.wait_log('"timeouts": 1', timeout=60)  # counted in the job's figures


def test_one_way_messages_arrive_in_order(bridge: NatsBridge, activemq: ActiveMqBroker) -> None:
    n = bridge.n

    async def publish() -> None:
        client = await nats.connect(bridge.nats.url)
        try:
            for i in range(200):
                await client.publish(f"events.{n}.created", f"e{i}".encode(), headers={"jms.seq": str(i)})
            await client.flush()
        finally:
            await client.close()

    asyncio.run(publish())
    received = received_from(activemq, f"events.{n}", 200)
    assert [m.body for m in received] == [f"e{i}" for i in range(200)]
    assert received[7].properties["seq"].value == "7"
    assert received[7].properties["NatsSubject"].value == f"events.{n}.created"


def test_a_restarted_nats_server_is_waited_out(bridge: NatsBridge, activemq: ActiveMqBroker) -> None:
    n = bridge.n
    bridge.nats.stop()
    bridge.nats.start()
    bridge.job.wait_log("reconnected", timeout=60)

    async def publish() -> None:
        client = await nats.connect(bridge.nats.url)
        try:
            await client.publish(f"events.{n}.after", b"after the restart")
            await client.flush()
        finally:
            await client.close()

    asyncio.run(publish())
    assert [m.body for m in received_from(activemq, f"events.{n}", 1)] == ["after the restart"]
    assert bridge.job.process is not None and bridge.job.process.poll() is None
