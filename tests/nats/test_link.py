"""The NATS adapter against a real nats-server: unreachable servers are waited out within the patience and
then stop the bridge with one line; the probe says whether the servers answer, as they come and go."""

from __future__ import annotations

import threading

import pytest

from bridge_job.config import NatsSpec
from bridge_job.errors import BridgeStopped
from bridge_job.nats.link import NatsLink
from bridge_job.nats.probe import NatsProbe
from jmsbridge.local import free_port, wait_until
from tests.brokers import NatsServer


def test_servers_unreachable_at_start_stop_the_bridge_after_the_patience() -> None:
    link = NatsLink(NatsSpec(servers=[f"nats://127.0.0.1:{free_port()}"]), "test", patience_seconds=2)
    with pytest.raises(BridgeStopped) as stopped:
        link.connect()
    assert "unreachable for" in stopped.value.reason
    assert "spec.outages.patienceSeconds=2" in stopped.value.reason
    assert "bring the NATS servers back or fix spec.nats.servers" in stopped.value.reason


def test_servers_that_come_within_the_patience_are_waited_for() -> None:
    server = NatsServer()
    link = NatsLink(NatsSpec(servers=[server.url]), "test", patience_seconds=60)
    starting = threading.Timer(1.5, server.start)
    starting.start()
    try:
        link.connect()  # returns once the server is there
        link.ping(5)
    finally:
        starting.join()
        link.close()
        server.cleanup()


class Listener:
    def __init__(self) -> None:
        self.states: list[str] = []

    def failing(self, what: str, error: object) -> None:
        self.states.append("failing")

    def back(self, what: str) -> None:
        self.states.append("back")


def test_the_probe_follows_the_servers() -> None:
    server = NatsServer().start()
    listener = Listener()
    probe = NatsProbe(NatsSpec(servers=[server.url]), listener, interval=0.2)
    try:
        wait_until(lambda: listener.states[-1:] == ["back"], 30, "the probe to reach NATS")
        server.stop()
        wait_until(lambda: listener.states[-1:] == ["failing"], 60, "the probe to see NATS gone")
        server.start()
        wait_until(lambda: listener.states[-1:] == ["back"], 60, "the probe to see NATS back")
    finally:
        probe.stop()
        server.cleanup()
