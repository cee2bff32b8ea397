"""Task reports an attacker sends (spark/live.py): over real UDP to the real receiver, which hands what it
takes to the real metrics (supervision/telemetry.py), as in the job's driver.

An outsider on the pod network has no key: anything it sends is refused unread. A task (or whoever holds
a run's key) can only report rows the driver planned, counts that grow, and no more than a task does.
Each refusal is counted by reason; none adds a series, none changes a figure, none is kept.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from prometheus_client import generate_latest

from bridge_job.spark.latency import no_latencies
from bridge_job.spark.live import (
    MAX_DATAGRAM,
    LiveReceiver,
    Refusal,
    Row,
    driver_address,
    live_option,
    reporting,
    sealed,
)
from bridge_job.supervision.telemetry import OBSERVATION, Metrics
from jmsbridge.local import wait_until
from testbed.builders import progress

BRIDGE = {"bridge": "orders"}
PUBLISHED = BRIDGE | {"outcome": "published"}


def egress_row(partition: int, published: int, started_ms: int, buckets: list[int] | None = None) -> Row:
    return {
        "partition": partition,
        "start": 0,
        "end": published,
        "records": published,
        "published": published,
        "started_ms": started_ms,
        "ended_ms": 0,
        "replayed": False,
        "latency_ms": 4 * published,
        "latency_buckets": buckets or [published, *no_latencies()[1:]],
    }


@dataclass
class Driver:
    """A driver's metrics and receiver, an egress query run planned over journal partitions 0 and 1."""

    metrics: Metrics
    receiver: LiveReceiver
    live: str  # what the driver gives the run's tasks with their partitions
    asked: list[float] = field(default_factory=list)  # when the receiver asked which rows are planned
    attacker: socket.socket = field(default_factory=lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    started_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    @property
    def key(self) -> bytes:
        """The run's key, as its tasks hold it."""
        return bytes.fromhex(self.live.rpartition("@")[0])

    def planned(self) -> set[str]:
        self.asked.append(time.monotonic())
        return {"0", "1"}

    def send(self, *datagrams: bytes) -> None:
        for datagram in datagrams:
            self.attacker.sendto(datagram, (self.receiver.host, self.receiver.port))

    def signed(self, row: Row, seq: int = 1, name: str = "", query: str = "egress") -> bytes:
        report = {"query": query, "name": name or str(row.get("partition")), "started_ms": row["started_ms"]}
        return sealed(self.key, report | {"seq": seq, "state": "moving", "row": row})

    def value(self, name: str, labels: dict[str, str]) -> float:
        return self.metrics.registry.get_sample_value(name, labels) or 0.0

    def rejected(self, reason: Refusal) -> float:
        return self.value("jmsbridge_telemetry_rejected_total", BRIDGE | {"reason": reason})

    def wait_rejected(self, reason: Refusal, count: float) -> None:
        wait_until(lambda: self.rejected(reason) == count, 30, f"{count:.0f} refused as {reason}")

    def exposition(self) -> list[str]:
        return generate_latest(self.metrics.registry).decode().splitlines()

    def figures(self) -> list[str]:
        """What the metrics say, but for the count of refusals."""
        return [line for line in self.exposition() if "jmsbridge_telemetry_rejected" not in line]


@pytest.fixture
def driver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Driver]:
    monkeypatch.delenv("SPARK_DRIVER_BIND_ADDRESS", raising=False)
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    metrics = Metrics("orders")
    receiver = LiveReceiver(metrics.record_live)
    made = Driver(metrics, receiver, "")
    # As supervision/queries.py asks it, with the address the job hands its queries (spark.driver.host).
    made.live = live_option(f"orders-driver-svc:{receiver.port}", "egress", made.planned)
    try:
        yield made
    finally:
        receiver.stop()
        made.attacker.close()


def test_a_forged_report_changes_no_figure_and_is_counted_as_refused(driver: Driver) -> None:
    """The report that set a route's counters and every latency bucket to 1e12, without the run's MAC."""
    before = driver.figures()
    huge = egress_row(0, 10**12, driver.started_ms, buckets=[10**12] * len(no_latencies()))
    report = {"query": "egress", "name": "0", "started_ms": driver.started_ms, "seq": 1, "state": "moving"}
    body = json.dumps(report | {"row": huge}).encode()
    driver.send(
        body,  # no MAC
        os.urandom(32) + body,  # a made-up one
        sealed(os.urandom(32), report | {"row": huge}),  # one under a key of the attacker's own
        sealed(driver.key, report | {"row": huge})[:-1] + b" ",  # a MAC of other bytes
    )
    driver.wait_rejected("unsigned", 4)
    assert driver.figures() == before
    assert driver.metrics.live.tasks() == 0


def test_a_key_of_an_earlier_run_of_the_query_is_no_longer_good(driver: Driver) -> None:
    earlier = driver.signed(egress_row(0, 1, driver.started_ms))
    restarted = live_option(driver.receiver.address, "egress", driver.planned)  # the query started again
    assert restarted != driver.live
    before = driver.figures()
    driver.send(earlier)
    driver.wait_rejected("unsigned", 1)
    assert driver.figures() == before


def test_a_signed_report_of_a_row_the_driver_did_not_plan_is_refused(driver: Driver) -> None:
    before = driver.figures()
    started = driver.started_ms
    driver.send(
        driver.signed(egress_row(7, 1, started)),  # a journal partition the driver did not plan
        driver.signed({"route": "requests", "received": 1, "started_ms": started}, query="nats"),
        driver.signed({"topic": "x", "partition": 0, "sent": 1, "started_ms": started}, query="ingress"),
        driver.signed(egress_row(0, 1, started), name="1"),  # named as one partition, the row of another
        driver.signed(egress_row(0, 1, started - 3_600_000)),  # a task older than the query run
    )
    driver.wait_rejected("unknown", 5)
    assert driver.figures() == before
    assert driver.metrics.live.tasks() == 0


def test_a_flood_of_made_up_names_adds_no_series_and_keeps_nothing(driver: Driver) -> None:
    driver.send(driver.signed(egress_row(0, 2, driver.started_ms)))  # a task of the run, reporting
    wait_until(lambda: driver.value("jmsbridge_routed_messages_total", PUBLISHED) == 2, 30, "a report")
    lines, kept = len(driver.exposition()), driver.metrics.live.tasks()
    for burst in range(10):  # 500 each way, in bursts a socket's buffer holds
        names = [f"made-up-{burst}-{n}" for n in range(50)]
        forged = [{"query": "nats", "name": n, "row": {"route": n, "received": 10**9}} for n in names]
        driver.send(*(json.dumps(report).encode() for report in forged))
        driver.wait_rejected("unsigned", 50 * (burst + 1))
        driver.send(*(driver.signed(egress_row(0, 3, driver.started_ms), name=name) for name in names))
        driver.wait_rejected("unknown", 50 * (burst + 1))
    assert len(driver.exposition()) == lines
    assert driver.metrics.live.tasks() == kept
    assert driver.value("jmsbridge_routed_messages_total", PUBLISHED) == 2
    assert len(driver.asked) <= 3  # a name it does not know makes the driver ask again, seldom


def test_a_signed_report_can_neither_lower_a_count_nor_raise_it_beyond_belief(driver: Driver) -> None:
    started = driver.started_ms
    first = driver.signed(egress_row(0, 5, started), seq=1)
    driver.send(first)
    wait_until(lambda: driver.value("jmsbridge_routed_messages_total", PUBLISHED) == 5, 30, "a report")
    before = driver.figures()
    driver.send(driver.signed(egress_row(0, 3, started), seq=2))
    driver.wait_rejected("lowered", 1)
    driver.send(driver.signed(egress_row(0, 10**12, started), seq=3))
    driver.send(driver.signed(egress_row(0, 6, started, buckets=[6, 10**12, *no_latencies()[2:]]), seq=4))
    driver.send(driver.signed(egress_row(0, 6, started) | {"latency_ms": 10**15}, seq=5))
    driver.wait_rejected("excessive", 3)
    driver.send(first)  # again, as captured
    driver.wait_rejected("replayed", 1)
    assert driver.figures() == before
    driver.send(driver.signed(egress_row(0, 8, started), seq=6))  # the task's next report: taken
    wait_until(lambda: driver.value("jmsbridge_routed_messages_total", PUBLISHED) == 8, 30, "the next one")


def test_ended_tasks_are_forgotten_and_what_they_counted_stays(driver: Driver) -> None:
    started, states = driver.started_ms, 'jmsbridge_task_state{bridge="orders",query="egress"'
    assert (driver.metrics.live.tasks(), driver.metrics.live.states()) == (0, {})
    reports = [driver.signed(egress_row(0, 3, started)), driver.signed(egress_row(1, 4, started))]
    driver.send(*reports)
    wait_until(lambda: driver.value("jmsbridge_routed_messages_total", PUBLISHED) == 7, 30, "two reports")
    assert driver.metrics.live.tasks() == 2
    assert sum(line.startswith(states) for line in driver.exposition()) == 6  # 3 states x 2 tasks

    # The interval ends: its rows add what the reports did not count, and its tasks leave the book.
    driver.metrics.record(
        "egress", progress(OBSERVATION, egress_row(0, 5, started), egress_row(1, 4, started))
    )
    assert driver.metrics.live.tasks() == 0
    assert driver.value("jmsbridge_routed_messages_total", PUBLISHED) == 9
    driver.send(reports[0])  # late, or replayed
    driver.wait_rejected("ended", 1)

    # The query ends: its tasks' states go, the counts stay.
    driver.metrics.record_queries(["egress"], [False])
    assert driver.metrics.live.states() == {}
    assert not any(line.startswith(states) for line in driver.exposition())
    assert driver.value("jmsbridge_routed_messages_total", PUBLISHED) == 9


def non_loopback_address() -> str | None:
    """This host's address on its way out, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # a route is looked up; nothing is sent
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") else address


def test_in_local_mode_the_receiver_listens_on_loopback_alone(driver: Driver) -> None:
    assert driver.receiver.host == "127.0.0.1"
    assert driver.live.endswith(f"@127.0.0.1:{driver.receiver.port}")  # where the tasks send, too
    address = non_loopback_address()
    if address is None:
        pytest.skip("this host has no address but loopback")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as attacker:
        attacker.connect((address, driver.receiver.port))
        attacker.settimeout(30)
        attacker.send(driver.signed(egress_row(0, 1, driver.started_ms)))
        with pytest.raises(ConnectionRefusedError):  # the host's own ICMP "port unreachable"
            attacker.recv(1)
    assert driver.rejected("unsigned") == 0 and driver.metrics.live.tasks() == 0


def test_on_kubernetes_the_receiver_listens_on_the_pods_address(monkeypatch: pytest.MonkeyPatch) -> None:
    assert driver_address({}) == "127.0.0.1"
    assert driver_address({"SPARK_LOCAL_IP": "10.1.2.3"}) == "10.1.2.3"
    assert (
        driver_address({"SPARK_DRIVER_BIND_ADDRESS": "10.4.5.6", "SPARK_LOCAL_IP": "10.1.2.3"}) == "10.4.5.6"
    )
    address = non_loopback_address()
    if address is None:
        pytest.skip("this host has no address but loopback")
    monkeypatch.setenv("SPARK_DRIVER_BIND_ADDRESS", address)  # Spark sets it from the pod's status.podIP
    receiver = LiveReceiver(lambda heard: None)
    try:
        assert receiver.host == address
    finally:
        receiver.stop()


def test_oversized_datagrams_are_refused_unread(driver: Driver) -> None:
    before = driver.figures()
    signed = driver.signed(egress_row(0, 1, driver.started_ms))
    driver.send(signed + b" " * (MAX_DATAGRAM + 1 - len(signed)))  # valid JSON, a good MAC of it: too long
    driver.wait_rejected("oversized", 1)
    assert driver.figures() == before


def test_the_job_says_where_it_serves_metrics_and_takes_reports(caplog: pytest.LogCaptureFixture) -> None:
    metrics = Metrics("orders")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with caplog.at_level(logging.INFO, "jmsbridge.telemetry"):
        metrics.serve(port, "127.0.0.1")
        receiver = LiveReceiver(metrics.record_live, host="127.0.0.1")
    try:
        said = caplog.messages
        assert f"metrics served at http://127.0.0.1:{port}/metrics" in said
        assert any(
            m.startswith(f"task reports (live figures) taken at 127.0.0.1:{receiver.port}") for m in said
        )
    finally:
        receiver.stop()
        metrics.stop()


def test_a_task_that_cannot_reach_the_driver_logs_no_key(caplog: pytest.LogCaptureFixture) -> None:
    key = "ab" * 32
    with (
        caplog.at_level(logging.WARNING, "jmsbridge.telemetry"),
        reporting(f"{key}@no-such-host.invalid:1", "egress", 1, lambda: {}),
    ):
        pass
    assert "no-such-host.invalid:1" in caplog.text and key not in caplog.text


def test_a_report_the_driver_refuses_is_logged_once_per_reason(
    driver: Driver, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "jmsbridge.telemetry"):
        driver.send(b"forged", b"forged again")
        driver.wait_rejected("unsigned", 2)
    [logged] = [m for m in caplog.messages if "refused a task report" in m]
    assert "unsigned" in logged
