"""The job's JMS health report as a status condition (pure)."""

from __future__ import annotations

import json

from jmsbridge_operator.job_health import JmsReport, StopReport, jms_condition, jms_reports, stop_reports


def data(**instances: dict[str, object]) -> dict[str, str]:
    updated = "2026-11-22T10:00:05Z"
    return {name: json.dumps({"jms": jms, "updated": updated}) for name, jms in instances.items()}


RECONNECTING = {
    "state": "Reconnecting",
    "since": "2026-11-22T10:00:00Z",
    "error": "JMS source orders: the connection to tcp://mq:61616 failed: Connection reset",
    "windowSeconds": 300,
}


def test_reconnecting_says_since_when_why_and_until_when() -> None:
    reports = jms_reports(data(primary=RECONNECTING, secondary={"state": "Connected"}))
    condition = jms_condition(reports, running={"primary"})
    assert condition is not None
    assert (condition.type, condition.status, condition.reason) == ("JmsConnected", "False", "Reconnecting")
    assert condition.message == (
        "instance primary lost its JMS broker at 2026-11-22T10:00:00Z and is reconnecting (it stops after "
        "jms.reconnect.windowSeconds=300): JMS source orders: the connection to tcp://mq:61616 failed: "
        "Connection reset; check the broker and the network between them"
    )


def test_only_running_instances_count() -> None:
    reports = jms_reports(data(primary=RECONNECTING, secondary={"state": "Connected", "since": "x"}))
    connected = jms_condition(reports, running={"secondary"})
    assert connected is not None and (connected.status, connected.reason) == ("True", "Connected")
    assert jms_condition(reports, running=set()) is None


def test_no_report_no_condition_and_unreadable_entries_are_ignored() -> None:
    assert jms_condition(jms_reports(None), running={"primary"}) is None
    assert jms_reports({"primary": "not json", "secondary": json.dumps({"other": 1})}) == []
    assert jms_reports(data(primary={"state": "Connected"})) == [JmsReport("primary", "Connected")]


def test_a_stop_report_is_read_and_a_jms_state_is_none() -> None:
    stopped = {"stopped": {"reason": "CheckpointMismatch", "message": "bridge b: checkpoint mismatch"}}
    reports = stop_reports({"primary": json.dumps(stopped), **data(secondary={"state": "Connected"})})
    assert reports == [StopReport("primary", "CheckpointMismatch", "bridge b: checkpoint mismatch")]
    assert jms_reports({"primary": json.dumps(stopped)}) == []
