"""One patience for every outage (bridge_job/faults/outages.py): backoff, rate-limited logging, the stop line.
The clock is the test's; outages of real brokers are in tests/e2e/test_faults.py and test_outages.py."""

from __future__ import annotations

import logging

import pydantic
import pytest

from bridge_job.config import JmsBridge
from bridge_job.faults.outages import BACKOFF_SECONDS, LOG_EVERY_SECONDS, Outage
from bridge_job.faults.stops import BridgeStopped
from bridge_job.jms import JmsError
from testbed.resources import simple_bridge


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_failing_past_the_patience_stops_naming_the_source_and_the_setting() -> None:
    clock = Clock()
    outage = Outage("JMS source orders.in", 60, clock)
    outage.failed(JmsError("the connection to tcp://amq:61616 failed: Connection refused"))
    clock.now += 59
    outage.failed(JmsError("still refused"))
    clock.now += 1
    with pytest.raises(BridgeStopped) as stopped:
        outage.failed(JmsError("the connection to tcp://amq:61616 failed: Connection refused"))
    assert stopped.value.reason.startswith("JMS source orders.in: unreachable for 60s")
    assert "spec.outages.patienceSeconds=60" in stopped.value.reason
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


def test_patience_zero_stops_at_the_first_failure() -> None:
    with pytest.raises(BridgeStopped):
        Outage("JMS", 0, Clock()).failed(JmsError("refused"))


def test_backoff_grows_to_its_cap_and_logs_are_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    outage = Outage("JMS source orders.in", 3600, clock)
    backoffs = []
    with caplog.at_level(logging.WARNING, logger="jmsbridge.outages"):
        for _ in range(20):
            outage.failed(JmsError("refused"))
            backoffs.append(outage.backoff())
            clock.now += 1.0
    assert backoffs[: len(BACKOFF_SECONDS)] == list(BACKOFF_SECONDS)
    assert set(backoffs[len(BACKOFF_SECONDS) :]) == {BACKOFF_SECONDS[-1]}
    assert len(caplog.records) == 20 // int(LOG_EVERY_SECONDS)  # one line per 10 s of the 20 s


def test_the_last_wait_ends_with_the_patience() -> None:
    clock = Clock()
    outage = Outage("JMS", 10, clock)
    for _ in range(4):
        outage.failed(JmsError("refused"))
        clock.now += outage.backoff()  # 0.5, 1, 2, 5: 8.5 s in
    outage.failed(JmsError("refused"))
    assert outage.backoff() == 1.5  # not 10: the patience ends then


@pytest.mark.parametrize(
    ("section", "old", "where"),
    [
        ("jms", {"reconnect": {"windowSeconds": 60}}, "jms.reconnect.windowSeconds"),
        ("kafka", {"startupTimeoutSeconds": 60}, "kafka.startupTimeoutSeconds"),
    ],
)
def test_the_settings_the_patience_replaced_are_refused_naming_the_new_one(
    section: str, old: dict[str, object], where: str
) -> None:
    document = simple_bridge()
    document["spec"][section] |= old
    with pytest.raises(pydantic.ValidationError) as refused:
        JmsBridge.model_validate(document)
    assert f"`{where}` was replaced by `spec.outages.patienceSeconds`" in str(refused.value)


def test_one_patience_for_the_whole_bridge_with_a_default_of_five_minutes() -> None:
    document = simple_bridge()
    assert JmsBridge.model_validate(document).spec.outages.patience_seconds == 300
    document["spec"]["outages"] = {"patienceSeconds": 30}
    assert JmsBridge.model_validate(document).spec.outages.patience_seconds == 30
