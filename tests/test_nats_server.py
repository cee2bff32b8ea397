"""The local NATS server (`jmsbridge.local.NatsServer`) serves real NATS to nats-py: requests with headers,
clients that reconnect when it comes back on its port, and JetStream streams."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from testbed.brokers import NatsServer

TIMEOUT = 20  # seconds, for each awaited condition


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(test(), timeout=60))


async def echo_service(client: Client, subject: str, seen: list[dict[str, str]]) -> None:
    """Replies to each request with its payload and its headers, noting the headers it was sent."""

    async def respond(msg: Msg) -> None:
        seen.append(dict(msg.headers or {}))
        await client.publish(msg.reply, msg.data, headers=msg.headers)

    await client.subscribe(subject, cb=respond)
    # Twice: nats-py 2.16 writes flush()'s PING straight to the socket, ahead of a SUB still queued for its
    # flusher task, so one PONG does not prove the server has the subscription (another connection's
    # request then got "no responders" about once in a hundred). The SUB is written before that PONG is
    # read, so the second PING follows it.
    await client.flush()
    await client.flush()


def test_a_request_carries_its_headers_to_the_responder_and_back(nats: NatsServer) -> None:
    async def test() -> None:
        service, requester = await nats_connect(nats), await nats_connect(nats)
        seen: list[dict[str, str]] = []
        await echo_service(service, "echo", seen)

        reply = await requester.request("echo", b"ping", timeout=TIMEOUT, headers={"X-Correlation": "c-1"})

        assert reply.data == b"ping"
        assert seen == [{"X-Correlation": "c-1"}]
        assert reply.headers == {"X-Correlation": "c-1"}
        await requester.close()
        await service.close()

    run(test)


@pytest.mark.parametrize("way", ["stop", "kill"])
def test_clients_reconnect_to_a_server_restarted_on_its_port(way: str) -> None:
    server = NatsServer().start()  # its own: the session's server is not for stopping
    port = server.port

    async def test() -> None:
        disconnected = {"service": asyncio.Event(), "requester": asyncio.Event()}
        reconnected = {"service": asyncio.Event(), "requester": asyncio.Event()}
        clients = {
            name: await nats_connect(server, disconnected=disconnected[name], reconnected=reconnected[name])
            for name in ("service", "requester")
        }
        seen: list[dict[str, str]] = []
        await echo_service(clients["service"], "echo", seen)
        assert (await clients["requester"].request("echo", b"before", timeout=TIMEOUT)).data == b"before"

        if way == "stop":
            server.stop()
        else:
            server.kill()
        await all_set(disconnected)
        server.start()
        assert server.port == port
        await all_set(reconnected)
        await clients["service"].flush()  # its subscription, sent again on reconnecting, is in place

        reply = await clients["requester"].request("echo", b"after", timeout=TIMEOUT, headers={"N": "2"})
        assert reply.data == b"after"
        assert seen[-1] == {"N": "2"}
        for client in clients.values():
            await client.close()

    try:
        run(test)
    finally:
        server.cleanup()


def test_a_jetstream_stream_keeps_a_published_message(nats_jetstream: NatsServer) -> None:
    async def test() -> None:
        client = await nats_connect(nats_jetstream)
        js = client.jetstream()
        await js.add_stream(name="ORDERS", subjects=["orders.>"])

        ack = await js.publish("orders.new", b"one", headers={"X-Correlation": "c-1"}, timeout=TIMEOUT)
        assert (ack.stream, ack.seq) == ("ORDERS", 1)

        reader = await js.pull_subscribe("orders.>", durable="reader", stream="ORDERS")
        (msg,) = await reader.fetch(1, timeout=TIMEOUT)
        assert (msg.subject, msg.data) == ("orders.new", b"one")
        assert msg.headers is not None and msg.headers["X-Correlation"] == "c-1"
        await msg.ack()
        await client.close()

    run(test)


def test_jetstream_streams_survive_a_restart(nats_jetstream: NatsServer) -> None:
    """The store is in the server's work dir, which a restart keeps."""

    async def publish() -> None:
        client = await nats_connect(nats_jetstream)
        js = client.jetstream()
        await js.add_stream(name="KEPT", subjects=["kept"])
        await js.publish("kept", b"still here", timeout=TIMEOUT)
        await client.close()

    async def read() -> None:
        client = await nats_connect(nats_jetstream)
        stored = await client.jetstream().get_msg("KEPT", 1)
        assert stored.data == b"still here"
        await client.close()

    run(publish)
    nats_jetstream.stop()
    nats_jetstream.start()
    run(read)


async def nats_connect(
    server: NatsServer, disconnected: asyncio.Event | None = None, reconnected: asyncio.Event | None = None
) -> Client:
    """A client that keeps trying to reconnect (each second: nats-py waits that long between attempts on
    one server), noting its disconnections and reconnections."""

    def setting(event: asyncio.Event | None) -> Callable[[], Awaitable[None]]:
        async def callback() -> None:
            if event is not None:
                event.set()

        return callback

    client = Client()
    await client.connect(
        server.url,
        max_reconnect_attempts=-1,
        reconnect_time_wait=1,
        disconnected_cb=setting(disconnected),
        reconnected_cb=setting(reconnected),
    )
    return client


async def all_set(events: dict[str, asyncio.Event]) -> None:
    await asyncio.wait_for(asyncio.gather(*(event.wait() for event in events.values())), TIMEOUT)
