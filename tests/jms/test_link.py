"""How long the ingest tolerates failing JMS calls: backoff, rate-limited logging, the window. The clock is
the test's; the reconnection itself runs on real brokers in test_faults_e2e.py."""

from __future__ import annotations

import logging

import pytest

from bridge_job.errors import BridgeStopped
from bridge_job.jms import JmsError
from bridge_job.jms.link import BACKOFF_SECONDS, LOG_EVERY_SECONDS, Outage


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_failing_past_the_window_stops_naming_the_source_and_the_window() -> None:
    clock = Clock()
    outage = Outage("JMS source orders.in", 60, clock)
    outage.failed(JmsError("the connection to tcp://amq:61616 failed: Connection refused"))
    clock.now += 59
    outage.failed(JmsError("still refused"))
    clock.now += 1
    with pytest.raises(BridgeStopped) as stopped:
        outage.failed(JmsError("the connection to tcp://amq:61616 failed: Connection refused"))
    assert stopped.value.reason.startswith("JMS source orders.in: failing for 60s")
    assert "jms.reconnect.windowSeconds (60)" in stopped.value.reason
    assert "Connection refused" in stopped.value.reason


def test_a_success_ends_the_outage() -> None:
    clock = Clock()
    outage = Outage("JMS source orders.in", 60, clock)
    outage.failed(JmsError("refused"))
    clock.now += 50
    outage.clear()
    clock.now += 50
    outage.failed(JmsError("refused again"))  # a new outage: 0 s into it, not 100 s
    assert outage.since == clock.now


def test_window_zero_stops_at_the_first_failure() -> None:
    with pytest.raises(BridgeStopped):
        Outage("JMS", 0, Clock()).failed(JmsError("refused"))


def test_backoff_grows_to_its_cap_and_logs_are_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    outage = Outage("JMS source orders.in", 3600, clock)
    backoffs = []
    with caplog.at_level(logging.WARNING, logger="jmsbridge.ingest"):
        for _ in range(20):
            outage.failed(JmsError("refused"))
            backoffs.append(outage.backoff())
            clock.now += 1.0
    assert backoffs[: len(BACKOFF_SECONDS)] == list(BACKOFF_SECONDS)
    assert set(backoffs[len(BACKOFF_SECONDS) :]) == {BACKOFF_SECONDS[-1]}
    assert len(caplog.records) == 20 // int(LOG_EVERY_SECONDS)  # one line per 10 s of the 20 s


def test_messages_of_a_batch_whose_commit_failed_come_back_flagged_redelivered() -> None:
    """A restarted broker redelivers them unflagged; egress drops only flagged redeliveries."""
    from bridge_job.jms.link import Uncommitted
    from bridge_job.message import Destination, DestinationKind, JmsMessage

    queue = Destination(DestinationKind.QUEUE, "orders.in")
    batch = [JmsMessage(queue, body=str(i), message_id=f"ID:{i}") for i in range(3)]
    uncommitted = Uncommitted()
    uncommitted.add(batch[:2])
    again = uncommitted.flag(batch)
    assert [m.redelivered for m in again] == [True, True, False]
    assert [m.redelivered for m in uncommitted.flag(batch)] == [False, False, False]  # flagged once


def test_the_last_wait_ends_with_the_window() -> None:
    clock = Clock()
    outage = Outage("JMS", 10, clock)
    for _ in range(4):
        outage.failed(JmsError("refused"))
        clock.now += outage.backoff()  # 0.5, 1, 2, 5: 8.5 s in
    outage.failed(JmsError("refused"))
    assert outage.backoff() == 1.5  # not 10: the window ends then
