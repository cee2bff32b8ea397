"""SparkApplication states and verdicts mapped into kstatus conditions (pure)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from jmsbridge_operator.conditions import Condition, Problem
from jmsbridge_operator.job_health import StopReport
from jmsbridge_operator.kafka_checks.gate import GateVerdict
from jmsbridge_operator.status import (
    ApplicationState,
    BridgeOutcome,
    RouteVerdict,
    bridge_status,
    find_condition,
    ready_transition,
    route_status,
    status_patch,
)

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"
FAILED = {"Ready": ("False", "ApplicationFailed"), "Stalled": ("True", "ApplicationFailed")}


def app(instance: str, state: str, message: str | None = None) -> ApplicationState:
    body = {"status": {"applicationState": {"state": state, "errorMessage": message}}} if state else {}
    return ApplicationState.observe(instance, f"b-{instance}", body)


def outcome(*apps: ApplicationState, **changes: Any) -> BridgeOutcome:
    return BridgeOutcome(generation=3, bridge_id="b", applications=apps, routes=("r1", "r2"), **changes)


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("", {"Ready": ("False", "Starting"), "Reconciling": ("True", "Starting")}),
        ("SUBMITTED", {"Ready": ("False", "Starting"), "Reconciling": ("True", "Starting")}),
        ("PENDING_RERUN", {"Ready": ("False", "Starting"), "Reconciling": ("True", "Starting")}),
        ("RUNNING", {"Ready": ("True", "Running")}),
        ("FAILED", {"Ready": ("False", "ApplicationFailed"), "Stalled": ("True", "ApplicationFailed")}),
        (
            "SUBMISSION_FAILED",
            {"Ready": ("False", "ApplicationFailed"), "Stalled": ("True", "ApplicationFailed")},
        ),
        ("COMPLETED", {"Ready": ("False", "ApplicationFailed"), "Stalled": ("True", "ApplicationFailed")}),
    ],
)
def test_single_instance_states(state: str, expected: dict[str, tuple[str, str]]) -> None:
    status = bridge_status(outcome(app("primary", state)), None, T0)
    assert conditions(status) == expected
    assert status["observedGeneration"] == 3
    assert all(c["observedGeneration"] == 3 for c in status["conditions"])


def test_failure_message_names_the_application_and_its_error() -> None:
    status = bridge_status(outcome(app("primary", "FAILED", "driver OOMKilled")), None, T0)
    ready = find_condition(status, "Ready")
    assert ready is not None
    assert ready["message"] == (
        "SparkApplication b-primary is FAILED: driver OOMKilled; its restartPolicy restarts it no more."
    )
    assert status["instances"] == [
        {
            "name": "primary",
            "application": "b-primary",
            "state": "FAILED",
            "message": "driver OOMKilled",
            "failures": 1,
            "lastFailure": {"message": "driver OOMKilled", "time": T0, "attempt": 0},
        }
    ]


def test_transition_time_is_kept_while_the_status_stays() -> None:
    first = bridge_status(outcome(app("primary", "SUBMITTED")), None, T0)
    same = bridge_status(outcome(app("primary", "SUBMITTED")), first, T1)
    assert same == first
    assert status_patch(first, same) is None
    running = bridge_status(outcome(app("primary", "RUNNING")), same, T1)
    ready = find_condition(running, "Ready")
    assert ready is not None and ready["lastTransitionTime"] == T1
    patch = status_patch(same, running)
    assert patch is not None and patch["conditions"] == running["conditions"]
    assert patch["activeInstance"] == "b-primary"


def test_removed_fields_are_nulled_in_the_patch() -> None:
    running = bridge_status(outcome(app("primary", "RUNNING")), None, T0)
    failed = bridge_status(outcome(app("primary", "FAILED")), running, T1)
    patch = status_patch(running, failed)
    assert patch is not None and patch["activeInstance"] is None


def test_standby_pair_roles_and_failover() -> None:
    both = bridge_status(outcome(app("primary", "RUNNING"), app("secondary", "RUNNING")), None, T0)
    assert both["activeInstance"] == "b-primary"
    assert [i["role"] for i in both["instances"]] == ["active", "standby"]
    assert conditions(both) == {"Ready": ("True", "Running")}

    failed_over = bridge_status(
        outcome(app("primary", "FAILED", "lost"), app("secondary", "RUNNING")), both, T1
    )
    assert failed_over["activeInstance"] == "b-secondary"
    assert failed_over["failovers"] == 1
    assert conditions(failed_over) == {"Ready": ("True", "Degraded")}

    # The primary comes back: it becomes the standby; the active one stays (no flapping).
    back = bridge_status(outcome(app("primary", "RUNNING"), app("secondary", "RUNNING")), failed_over, T1)
    assert back["activeInstance"] == "b-secondary" and back["failovers"] == 1
    assert [i["role"] for i in back["instances"]] == ["standby", "active"]


def test_standby_still_starting_is_reconciling() -> None:
    status = bridge_status(outcome(app("primary", "RUNNING"), app("secondary", "SUBMITTED")), None, T0)
    assert conditions(status) == {"Ready": ("True", "Running"), "Reconciling": ("True", "StandbyStarting")}


def test_invalid_spec_suspend_conflict_and_gate() -> None:
    invalid = bridge_status(outcome(spec_error="spec.kafka: needs `sasl`"), None, T0)
    assert conditions(invalid) == {"Ready": ("False", "InvalidSpec"), "Stalled": ("True", "InvalidSpec")}
    ready = find_condition(invalid, "Ready")
    assert ready is not None and "spec.kafka: needs `sasl`" in ready["message"]

    suspended = bridge_status(outcome(suspended=True), None, T0)
    assert conditions(suspended) == {"Ready": ("False", "Suspended")}

    conflict = bridge_status(outcome(conflict="ConfigMap b-config is not ours"), None, T0)
    assert conditions(conflict)["Stalled"] == ("True", "NameConflict")

    hard = GateVerdict(
        open=False,
        reason="TopicNotFound",
        message="topic orders does not exist",
        conditions=(Condition("KafkaReady", "False", "TopicNotFound", "topic orders does not exist"),),
    )
    held = bridge_status(outcome(gate=hard), None, T0)
    assert conditions(held) == {
        "Ready": ("False", "TopicNotFound"),
        "Stalled": ("True", "TopicNotFound"),
        "KafkaReady": ("False", "TopicNotFound"),
    }
    transient = GateVerdict(open=False, reason="KafkaUnreachable", message="retrying", transient=True)
    assert conditions(bridge_status(outcome(gate=transient), None, T0)) == {
        "Ready": ("False", "KafkaUnreachable"),
        "Reconciling": ("True", "KafkaUnreachable"),
    }
    with pytest.raises(ValueError, match="reason"):
        GateVerdict(open=False)


def test_a_transient_hold_leaves_a_running_bridge_ready() -> None:
    """Kafka not answering (within its grace period) or a check under way: running stays running."""
    unknown = Condition("KafkaReady", "Unknown", "KafkaUnreachable", "Kafka at k:9092 did not answer")
    transient = GateVerdict(
        open=False, reason="KafkaUnreachable", message="retrying", transient=True, conditions=(unknown,)
    )
    running = bridge_status(outcome(app("primary", "RUNNING"), gate=transient), None, T0)
    assert conditions(running) == {
        "Ready": ("True", "Running"),
        "Reconciling": ("True", "KafkaUnreachable"),
        "KafkaReady": ("Unknown", "KafkaUnreachable"),
    }
    assert running["activeInstance"] == "b-primary"
    standby = bridge_status(
        outcome(app("primary", "RUNNING"), app("secondary", "SUBMITTED"), gate=transient), None, T0
    )
    assert conditions(standby)["Reconciling"] == ("True", "KafkaUnreachable")  # one Reconciling only
    assert len(standby["conditions"]) == 3
    starting = bridge_status(outcome(app("primary", "SUBMITTED"), gate=transient), None, T0)
    assert conditions(starting)["Ready"] == ("False", "KafkaUnreachable")


def test_ready_transitions_make_events() -> None:
    starting = bridge_status(outcome(app("primary", "SUBMITTED")), None, T0)
    assert ready_transition(None, starting) is None  # a new bridge: ConfigCreated, ApplicationCreated say it
    invalid = bridge_status(outcome(spec_error="spec.kafka: no bootstrapServers"), None, T0)
    first = ready_transition(None, invalid)
    assert first is not None and (first.type, first.reason) == ("Warning", "InvalidSpec")
    assert ready_transition(starting, bridge_status(outcome(app("primary", "NEW")), starting, T1)) is None
    failed = bridge_status(outcome(app("primary", "FAILED")), starting, T1)
    event = ready_transition(starting, failed)
    assert event is not None and (event.type, event.reason) == ("Warning", "ApplicationFailed")

    # Unreachable within the grace period, then past it: the same reason, but now a hard failure.
    transient = GateVerdict(open=False, reason="KafkaUnreachable", message="retrying", transient=True)
    hard = GateVerdict(open=False, reason="KafkaUnreachable", message="unreachable for 300s")
    retrying = bridge_status(outcome(gate=transient), None, T0)
    given_up = bridge_status(outcome(gate=hard), retrying, T1)
    event = ready_transition(retrying, given_up)
    assert event is not None and (event.type, event.reason) == ("Warning", "KafkaUnreachable")
    assert ready_transition(given_up, bridge_status(outcome(gate=hard), given_up, T1)) is None


def test_route_status() -> None:
    accepted = route_status(RouteVerdict("r", "b", 2), 4, None, T0)
    assert conditions(accepted) == {"Accepted": ("True", "Accepted"), "Ready": ("True", "InEffect")}
    assert accepted["position"] == 2 and accepted["bridge"] == "b" and accepted["observedGeneration"] == 4
    taken = Problem("DuplicateOrder", "spec.order", "taken")
    rejected = route_status(RouteVerdict("r", "b", problems=(taken,)), 4, accepted, T1)
    assert conditions(rejected) == {
        "Accepted": ("False", "DuplicateOrder"),
        "Ready": ("False", "DuplicateOrder"),
        "Stalled": ("True", "DuplicateOrder"),
    }
    assert "position" not in rejected
    bridge_at_fault = Problem("BridgeInvalid", "spec.bridgeRef.name", "fix it")
    waiting = route_status(RouteVerdict("r", "b", problems=(bridge_at_fault,), stalls=False), 4, None, T0)
    assert "Stalled" not in conditions(waiting)


@pytest.mark.parametrize("reason", ["JmsAuthenticationFailed", "JmsTlsFailed"])
def test_a_refused_jms_login_or_tls_the_job_reports_is_its_reason_while_restarted_then_stalled(
    reason: str,
) -> None:
    line = "the JMS broker refused the bridge's login (JMSBRIDGE_JMS_USERNAME and ..., from Secret amq, ...)"
    stops = (StopReport("primary", reason, line),)
    failing = dataclasses.replace(app("primary", "FAILING", "exit 2"), retried=True)  # its restartPolicy
    restarting = bridge_status(outcome(failing, stop_reports=stops), None, T0)
    assert conditions(restarting) == {
        "Ready": ("False", reason),
        "Reconciling": ("True", reason),
    }
    message = str(find_condition(restarting, "Ready"))
    assert f"{line} (instance primary); " in message and "the spark-operator restarts it" in message
    given_up = bridge_status(outcome(app("primary", "FAILED"), stop_reports=stops), None, T0)
    assert conditions(given_up) == {
        "Ready": ("False", reason),
        "Stalled": ("True", reason),
    }
    # another instance's report says nothing about this one
    other = (StopReport("secondary", reason, line),)
    assert (
        conditions(bridge_status(outcome(app("primary", "FAILED"), stop_reports=other), None, T0)) == FAILED
    )


def test_a_checkpoint_mismatch_stalls_at_once_with_its_own_reason() -> None:
    line = "bridge b: checkpoint mismatch on topic b.jms-bridge.journal: checkpoint /cp/b was taken on ..."
    stops = (StopReport("primary", "CheckpointMismatch", line),)
    failing = app("primary", "FAILING", "exit 2")  # the spark-operator would restart it
    status = bridge_status(outcome(failing, stop_reports=stops), None, T0)
    assert conditions(status) == {
        "Ready": ("False", "CheckpointMismatch"),
        "Stalled": ("True", "CheckpointMismatch"),
    }
    assert line in str(find_condition(status, "Stalled"))
    # a report of an instance that runs again (its JMS state replaced it) or of another instance: not this
    other = (StopReport("secondary", "CheckpointMismatch", line),)
    assert (
        conditions(bridge_status(outcome(app("primary", "FAILED"), stop_reports=other), None, T0)) == FAILED
    )
