"""Live figures of real-time tasks (spark/live.py): a task's reports over real UDP to the driver, counted
once with its interval's row, and its state.

The end to end view, a real job's metrics before its interval ends: tests/e2e/test_egress.py. What the
driver refuses (forged, unknown, unbelievable reports): tests/spark/test_live_attacks.py.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from bridge_job.faults.outages import Outage
from bridge_job.spark.latency import count_latency, no_latencies
from bridge_job.spark.live import (
    STALE_SECONDS,
    LiveCounts,
    LiveReceiver,
    Refusal,
    Report,
    Row,
    difference,
    reporting,
)
from bridge_job.supervision.telemetry import OBSERVATION, Metrics
from jmsbridge.local import wait_until
from testbed.builders import progress


def egress_row(started_ms: int, published: int, *latencies_ms: int) -> Row:
    buckets = no_latencies()
    for took in latencies_ms:
        count_latency(buckets, took)
    return {
        "partition": 0,
        "start": 10,
        "end": 10 + published,
        "records": published,
        "published": published,
        "started_ms": started_ms,
        "replayed": False,
        "latency_ms": sum(latencies_ms),
        "latency_buckets": buckets,
    }


def test_a_difference_takes_counts_and_buckets_and_keeps_the_rest() -> None:
    before, now = egress_row(5, 2, 3, 300), egress_row(5, 5, 3, 300, 4, 4, 9)
    added = difference(now, before)
    assert (added["published"], added["latency_ms"], added["started_ms"], added["end"]) == (3, 17, 5, 15)
    assert added["replayed"] is False and sum(added["latency_buckets"]) == 3
    assert difference(now, None) == now


def report(query: str, name: str, started_ms: int, seq: int, row: Row, state: str = "moving") -> Report:
    return Report(query, 0, name, started_ms, seq, state, row)


def test_reports_count_as_they_come_and_the_intervals_row_adds_only_the_rest() -> None:
    book = LiveCounts()
    assert book.report(report("egress", "0", 100, 1, egress_row(100, 2))) == egress_row(100, 2)
    added = book.report(report("egress", "0", 100, 2, egress_row(100, 7)))
    assert isinstance(added, dict) and added["published"] == 5
    # The partition's next task (started later) reports before this one's row is in: counted apart.
    assert isinstance(book.report(report("egress", "0", 200, 1, egress_row(200, 1))), dict)
    [rest] = book.finish("egress", [egress_row(100, 9)])
    assert rest["published"] == 2  # 7 reported, 9 in the row
    late: Refusal = "ended"
    assert book.report(report("egress", "0", 100, 3, egress_row(100, 9), "idle")) == late  # not again
    [rest] = book.finish("egress", [egress_row(200, 4)])
    assert rest["published"] == 3


def test_a_failed_attempts_reports_stay_counted_and_its_retry_counts_apart() -> None:
    book = LiveCounts()
    book.report(report("ingress", "orders:0", 100, 1, {"topic": "orders", "partition": 0, "sent": 3}))
    retried = {"topic": "orders", "partition": 0, "sent": 5, "started_ms": 150}
    assert book.finish("ingress", [retried]) == [retried]  # the retry never reported: all of it
    again = report("ingress", "orders:0", 100, 2, {"topic": "orders", "partition": 0, "sent": 4})
    assert book.report(again) == "ended"


def test_a_task_not_heard_from_for_a_while_has_no_state() -> None:
    now = [0.0]
    book = LiveCounts(clock=lambda: now[0])
    book.report(report("nats", "requests", 1, 1, {"route": "requests"}, "waiting"))
    assert book.states() == {("nats", "requests"): "waiting"}
    now[0] += STALE_SECONDS
    assert book.states() == {}


def reports(received: list[Report | Refusal]) -> list[Report]:
    return [r for r in received if isinstance(r, Report)]


def test_a_task_reports_over_udp_while_it_runs_and_says_when_it_waits_out_an_outage() -> None:
    received: list[Report | Refusal] = []
    receiver = LiveReceiver(received.append)
    started = int(time.time() * 1000)
    row = egress_row(started, 0)
    try:
        live = receiver.for_tasks("egress", lambda: {"0"})
        with reporting(live, "egress", started, lambda: {"0": dict(row)}):
            row["published"] = 3
            wait_until(lambda: any(r.row["published"] == 3 for r in reports(received)), 30, "a report")
            last = reports(received)[-1]
            assert (last.query, last.name, last.started_ms, last.state) == ("egress", "0", started, "moving")
            outage = Outage("Kafka: asking for the end of journal/0", 300)
            outage.failed("connection refused")
            row["published"] = 4
            wait_until(lambda: reports(received)[-1].state == "waiting", 30, "a report while waiting")
            outage.clear()
        assert "live-report" not in {t.name for t in threading.enumerate()}  # the task ended: no reports
    finally:
        receiver.stop()
    assert all(isinstance(r, Report) for r in received)  # the task's own reports: none refused


def test_metrics_count_each_record_once_whether_it_came_live_or_with_the_row() -> None:
    metrics = Metrics("orders")
    value = metrics.registry.get_sample_value
    published = {"bridge": "orders", "outcome": "published"}
    metrics.record_live(report("egress", "0", 100, 1, egress_row(100, 2, 4, 4)))
    assert value("jmsbridge_routed_messages_total", published) == 2
    assert value("jmsbridge_egress_latency_seconds_count", {"bridge": "orders"}) == 2
    task = {"bridge": "orders", "query": "egress", "task": "0"}
    assert value("jmsbridge_task_state", task | {"state": "moving"}) == 1
    assert value("jmsbridge_task_state", task | {"state": "idle"}) == 0
    metrics.record("egress", progress(OBSERVATION, egress_row(100, 3, 4, 4, 700)))
    assert value("jmsbridge_routed_messages_total", published) == 3
    assert value("jmsbridge_egress_latency_seconds_count", {"bridge": "orders"}) == 3
    assert value("jmsbridge_egress_latency_seconds_sum", {"bridge": "orders"}) == 0.708


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_the_receiver_takes_reports_over_ipv6_where_the_host_has_it() -> None:
    if not socket.has_ipv6 or not ipv6_loopback():
        pytest.skip("no IPv6 loopback on this host")
    received: list[Report | Refusal] = []
    receiver = LiveReceiver(received.append, host="::1")  # a pod's address may be IPv6
    started = int(time.time() * 1000)
    try:
        live = receiver.for_tasks("nats", lambda: {"requests"})
        assert live.endswith(f"@[::1]:{receiver.port}")
        with reporting(live, "nats", started, lambda: {"requests": {"route": "requests"}}):
            wait_until(lambda: bool(received), 30, "a report over IPv6")
    finally:
        receiver.stop()
    assert isinstance(received[0], Report) and received[0].name == "requests"
