"""NATS <-> JMS on real brokers: nats-server, ActiveMQ and the job on local Spark (docs/nats.md).

One bridge serves the module: NATS requesters get their answers from a JMS service of either convention,
one-way messages arrive in order, a JMS service that never answers makes the requests time out with a
408 status, and a NATS server restarted mid-stream is waited out; the other way, JMS messages are
published to NATS in order, and JMS requesters (TemporaryQueue) get their answers from a NATS service.
The NATS clients are nats-py's, as a NATS application would write them. The server runs in operator mode
(decentralized JWT authentication): the bridge and the clients connect with `.creds` files, the bridge's
from the environment the operator fills from `spec.nats.credsSecretRef`.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import nats
import pytest
from nats.aio.client import Client, RawCredentials
from nats.aio.msg import Msg

from bridge_job.config import ENV_NATS_CREDS
from bridge_job.formats import KafkaRecord, envelope
from bridge_job.message import Destination, DestinationKind, JmsMessage, Property
from jmsbridge.local import BridgeJob, JmsRequester
from testbed.brokers import ActiveMqBroker, KafkaBroker, NatsServer, free_port, wait_until
from testbed.harness import bridge_document, received_from, send, write_yaml
from tests.support.jms_services import serving
from tests.support.nats_accounts import Account
from tests.support.nats_service import nats_service


def queue(name: str) -> Destination:
    return Destination(DestinationKind.QUEUE, name)


# One worker runs the module, so that its one bridge job serves every test of it.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("nats")]


@dataclass
class NatsBridge:
    job: BridgeJob
    nats: NatsServer
    n: str  # this module's subjects and queues carry it
    creds: str  # a NATS client's .creds file (not the bridge's)

    async def connect(self) -> Client:
        return await nats.connect(self.nats.url, user_credentials=RawCredentials(self.creds))


def a_route(name: str, bridge: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "jmsbridge.dev/v1alpha1",
        "kind": "JmsBridgeRoute",
        "metadata": {"name": name},
        "spec": {"bridgeRef": {"name": bridge}, **spec},
    }


def nats_route(name: str, bridge: str, subject: str, queue: str, **spec: object) -> dict[str, object]:
    destination = {"queue": queue}
    return a_route(
        name, bridge, direction="natsToJms", natsSubject=subject, jmsDestination=destination, **spec
    )


def to_nats_route(name: str, bridge: str, queue: str, subject: str, **spec: object) -> dict[str, object]:
    match = {"address": queue}
    return a_route(name, bridge, direction="jmsToNats", match=match, natsSubject=subject, **spec)


@pytest.fixture(scope="module")
def bridge(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NatsBridge]:
    work = tmp_path_factory.mktemp("nats")
    account = Account.new()
    # This module's own server (one test restarts it), trusting the account's users only.
    server = NatsServer(args=["-c", str(account.server_config(work / "nats.conf"))]).start()
    n = uuid.uuid4().hex[:8]
    name = f"nats-{n}"
    sources = [{"queue": f"out.{n}"}, {"queue": f"ask.{n}"}, {"queue": f"envout.{n}"}]
    creds = {"name": "nats-bridge", "key": "bridge.creds"}
    document = bridge_document(
        name, activemq, kafka, sources, nats={"servers": [server.url], "credsSecretRef": creds}
    )
    files = [
        write_yaml(
            work / "bridge.yaml",
            document,
            nats_route("requests", name, f"svc.{n}.>", f"svc.{n}", order=1),
            nats_route("silent", name, f"silent.{n}", f"silent.{n}", order=2, timeoutSeconds=2),
            nats_route("events", name, f"events.{n}.*", f"events.{n}", order=3),
            nats_route("enveloped", name, f"env.{n}", f"env.{n}", order=4, format="envelope"),
            to_nats_route("out", name, f"out.{n}", f"out.{n}.events", order=5),
            to_nats_route("ask", name, f"ask.{n}", f"ask.{n}.svc", order=6),
            to_nats_route("envout", name, f"envout.{n}", f"envout.{n}", order=7, format="envelope"),
        )
    ]
    job = BridgeJob(
        files, work, metrics_port=free_port(), env={ENV_NATS_CREDS: account.creds("bridge")}
    ).start()
    try:
        # Logged once the server has all of the service's subscriptions (nats_service/service.py).
        job.wait_log("subscribed to NATS subject", timeout=180)
        yield NatsBridge(job, server, n, account.creds("client"))
    finally:
        job.stop()
        server.cleanup()


def served(port: int, name: str, labels: dict[str, str]) -> float | None:
    """One sample of the job's Prometheus endpoint, scraped over HTTP."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return None


async def _requests(bridge: NatsBridge, subject: str, texts: list[str], headers: dict[str, str]) -> list[Msg]:
    client = await bridge.connect()
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
            asks.append(_requests(bridge, f"svc.{n}.orders", texts, headers))
        return list(await asyncio.gather(*asks))

    with serving(activemq, f"svc.{n}"):
        answers = asyncio.run(three())
    assert sum(len(a) for a in answers) == 1000
    # The job's metrics once the intervals that answered them ended: each reply counted, its round trip too.
    port, requests = bridge.job.metrics_port, {"bridge": f"nats-{n}", "route": "requests"}
    seen: list[float | None] = [None]  # what the metric said last: too few (late), or too many (twice)

    def round_trips() -> bool:
        seen[0] = served(port, "jmsbridge_nats_round_trip_seconds_count", requests)
        return seen[0] == 1000 - late_replies(bridge.job)

    try:  # live, or at the latest when the tasks' interval ends (30 s; later on a loaded machine)
        wait_until(round_trips, timeout=120, what="1,000 round trips in jmsbridge_nats_round_trip_seconds")
    except TimeoutError as error:
        raise AssertionError(f"{error}: the count is {seen[0]}") from None
    late = late_replies(bridge.job)
    assert served(port, "jmsbridge_nats_messages_total", requests | {"outcome": "replies"}) == 1000 - late
    # Counted as the task ran (spark/live.py) and again by the rows of its intervals: once all the same.
    wait_until(
        lambda: logged_replies(bridge.job) == 1000 - late, 60, "the intervals' rows of the 1,000 replies"
    )
    assert served(port, "jmsbridge_nats_messages_total", requests | {"outcome": "replies"}) == 1000 - late
    assert served(port, "jmsbridge_nats_round_trip_seconds_count", requests) == 1000 - late
    job = {"bridge": f"nats-{n}"}
    for system in ("jms", "kafka", "nats"):  # what its health report says, as gauges
        assert served(port, "jmsbridge_connected", job | {"system": system}) == 1, system
    assert served(port, "jmsbridge_active", job | {"bridge_instance": "a"}) == 1  # alone: active
    assert served(port, "jmsbridge_query_active", job | {"query": "nats"}) == 1
    for who, got in enumerate(answers):
        assert [m.data.decode() for m in got] == [f"re: {who}.{i}" for i in range(len(got))]
        first = got[0].headers or {}
        assert first["jms.count"] == str(who)  # a property, int on the JMS side and back
        assert "count=int" in first["jmsbridge.types"]
        assert first["jms.NatsSubject"] == f"svc.{n}.orders"


def logged_replies(job: BridgeJob, lines_of: str = "nats interval ") -> int:
    """The replies of the `requests` route in the job's `nats interval` lines (each interval's rows,
    logged when it ends)."""
    lines = [line.partition(lines_of)[2] for line in job.log().splitlines()]
    rows = [json.loads(line) for line in lines if line]
    return sum(int(row["replies"]) for row in rows if row["route"] == "requests")


def late_replies(job: BridgeJob) -> int:
    """Replies a NATS service made after its last task, when the next task ran in another Spark worker
    and none came back to its own: said in the log when it closes, not in the metrics (a known gap)."""
    return logged_replies(job, "nats counts no task reported ")


def test_a_request_no_jms_service_answers_gets_a_timeout_status(bridge: NatsBridge) -> None:
    async def ask() -> Msg:
        client = await bridge.connect()
        try:
            return await client.request(f"silent.{bridge.n}", b"anyone?", timeout=30)
        finally:
            await client.close()

    reply = asyncio.run(ask())
    headers = reply.headers or {}
    assert headers.get("Status") == "408", headers
    assert "no answer from JMS within 2s (route silent" in headers["Jmsbridge-Error"]
    # Counted in the job's figures, logged when the task's interval ends (30 s; later on a loaded machine).
    bridge.job.wait_log('"timeouts": 1', timeout=120)


def test_one_way_messages_arrive_in_order(bridge: NatsBridge, activemq: ActiveMqBroker) -> None:
    n = bridge.n

    async def publish() -> None:
        client = await bridge.connect()
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
        client = await bridge.connect()
        try:
            await client.publish(f"events.{n}.after", b"after the restart")
            await client.flush()
        finally:
            await client.close()

    asyncio.run(publish())
    assert [m.body for m in received_from(activemq, f"events.{n}", 1)] == ["after the restart"]
    assert bridge.job.process is not None and bridge.job.process.poll() is None


def test_jms_messages_are_published_to_nats_in_order(bridge: NatsBridge, activemq: ActiveMqBroker) -> None:
    n = bridge.n
    got: list[Msg] = []

    async def listen() -> None:
        client = await bridge.connect()
        try:
            sub = await client.subscribe(f"out.{n}.events")
            await client.flush()
            send(
                activemq,
                [
                    JmsMessage(queue(f"out.{n}"), body=f"m{i}", properties={"seq": Property.of(i)})
                    for i in range(50)
                ],
            )
            while len(got) < 50:
                got.append(await sub.next_msg(timeout=60))
        finally:
            await client.close()

    asyncio.run(listen())
    assert [m.data.decode() for m in got] == [f"m{i}" for i in range(50)]
    headers = got[7].headers or {}
    assert headers["jms.seq"] == "7" and "seq=long" in headers["jmsbridge.types"]
    assert headers["jms.JMSDestination"] == f"queue://out.{n}"


def test_jms_requesters_get_their_answers_from_a_nats_service(
    bridge: NatsBridge, activemq: ActiveMqBroker
) -> None:
    n = bridge.n
    requesters = [JmsRequester(activemq, f"ask.{n}") for _ in range(2)]
    try:
        with nats_service(bridge.connect, f"ask.{n}.svc"):
            for who, requester in enumerate(requesters):
                for i in range(5):
                    requester.request(f"q{who}.{i}", f"c{who}-{i}")
            answers = [sorted(r.reply(timeout_ms=60_000) for _ in range(5)) for r in requesters]
    finally:
        for requester in requesters:
            requester.close()
    for who, got in enumerate(answers):
        assert got == [(f"c{who}-{i}", f"re: q{who}.{i}") for i in range(5)]


def test_the_envelope_carries_headers_in_the_payload_for_a_plain_nats_client(
    bridge: NatsBridge, activemq: ActiveMqBroker
) -> None:
    """The nats-jms-bridge header protocol, read from the data alone (formats/envelope.py reads it as the
    seed's clients do): what no NATS header could carry arrives too."""
    n = bridge.n

    async def listen() -> Msg:
        client = await bridge.connect()
        try:
            sub = await client.subscribe(f"envout.{n}")
            await client.flush()
            note = {"note": Property.string("multi\nline"), "count": Property.of(7)}
            send(activemq, [JmsMessage(queue(f"envout.{n}"), body="payload", properties=note)])
            return await sub.next_msg(timeout=60)
        finally:
            await client.close()

    message = envelope.decode(KafkaRecord(value=asyncio.run(listen()).data), queue(f"envout.{n}"))
    assert message.body == b"payload"  # the message type is in a header, not the envelope
    assert message.properties["note"].value == "multi\nline"  # no NATS header could carry it
    assert message.properties["count"].value == 7
