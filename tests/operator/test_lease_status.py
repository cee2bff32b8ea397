"""The bridge's Lease in its status: active instance, failovers, nobody active (pure)."""

from __future__ import annotations

import datetime
from typing import Any

from jmsbridge_operator.lease_status import BridgeLease, failover_message, parse_time, recheck_at
from jmsbridge_operator.status import ApplicationState, BridgeOutcome, bridge_status, find_condition

T0 = "2026-01-01T00:00:00Z"
LEASE = "b-jms-bridge"


def at(seconds: int) -> str:
    return f"2026-01-01T00:{seconds // 60:02d}:{seconds % 60:02d}Z"


def lease(holder: str | None, renewed: int, transitions: int = 0, acquired: int = 0) -> BridgeLease:
    spec: dict[str, Any] = {
        "leaseDurationSeconds": 10,
        "renewTime": at(renewed).replace("Z", ".250000Z"),  # a MicroTime, as the job writes it
        "acquireTime": at(acquired).replace("Z", ".000000Z"),
        "leaseTransitions": transitions,
    }
    if holder:
        spec["holderIdentity"] = holder
    return BridgeLease("apps", LEASE, 10, {"metadata": {"name": LEASE}, "spec": spec})


ABSENT = BridgeLease("apps", LEASE, 10, None)


def apps(primary: str = "RUNNING", secondary: str = "RUNNING") -> tuple[ApplicationState, ...]:
    def one(instance: str, state: str) -> ApplicationState:
        body = {"status": {"applicationState": {"state": state}}}
        return ApplicationState.observe(instance, f"b-{instance}", body)

    return (one("primary", primary), one("secondary", secondary))


def status(
    the_lease: BridgeLease, now: str, previous: dict[str, Any] | None = None, **changes: Any
) -> dict[str, Any]:
    outcome = BridgeOutcome(
        generation=1, bridge_id="b", applications=changes.pop("applications", apps()), lease=the_lease
    )
    return bridge_status(outcome, previous, now)


def condition(status: dict[str, Any], type_: str) -> tuple[str, str] | None:
    found = find_condition(status, type_)
    return (found["status"], found["reason"]) if found else None


def test_the_holder_of_the_lease_is_the_active_instance_whatever_the_states_say() -> None:
    # Both RUNNING: inference would pick the first (primary); the Lease says secondary.
    held = status(lease("secondary/pod-b", renewed=5), at(8))
    assert held["activeInstance"] == "b-secondary"
    assert [i["role"] for i in held["instances"]] == ["standby", "active"]
    assert held["leaseHolder"] == "secondary/pod-b"
    assert condition(held, "ActiveInstance") == ("True", "LeaseHeld")
    assert condition(held, "Ready") == ("True", "Running")
    assert "b-secondary active" in find_condition(held, "Ready")["message"]  # type: ignore[index]


def test_failovers_and_the_last_failover_time_come_from_the_lease() -> None:
    first = status(lease("primary/pod-a", renewed=5), at(8))
    assert first["failovers"] == 0 and "lastFailoverTime" not in first
    taken = status(lease("secondary/pod-b", renewed=30, transitions=1, acquired=29), at(31), first)
    assert taken["failovers"] == 1
    assert taken["lastFailoverTime"] == "2026-01-01T00:00:29.000000Z"
    assert taken["activeInstance"] == "b-secondary"


def test_a_failover_is_announced_old_to_new_holder() -> None:
    first = status(lease("primary/pod-a", renewed=5), at(8))
    assert failover_message({}, first) is None  # the first holder is no failover
    assert failover_message(first, status(lease("primary/pod-a", renewed=8), at(9), first)) is None
    # A clean stop released the lease (no holder): the last holder is remembered for the next one.
    released = status(lease(None, renewed=10), at(11), first)
    assert released["leaseHolder"] == "primary/pod-a" and "activeInstance" not in released
    taken = status(lease("secondary/pod-b", renewed=12, transitions=1, acquired=12), at(13), released)
    message = failover_message(released, taken)
    assert message is not None
    assert "primary/pod-a -> secondary/pod-b (b-primary -> b-secondary); failover 1" in message
    # The same holder in a new tenure (its pod came back under the same name) is a failover too.
    again = status(lease("secondary/pod-b", renewed=40, transitions=2, acquired=40), at(41), taken)
    assert failover_message(taken, again) is not None


def test_nobody_holding_the_lease_is_awaited_for_its_duration_then_no_active_instance() -> None:
    held = status(lease("primary/pod-a", renewed=5), at(8))
    # The holder stopped renewing at 5.25: its tenure ends at 15.25, looked at a second later.
    assert recheck_at(lease("primary/pod-a", renewed=5), held, _t(8)) == parse_time("2026-01-01T00:00:16.25Z")
    expired = status(lease("primary/pod-a", renewed=5), at(16), held)
    assert "activeInstance" not in expired
    assert condition(expired, "ActiveInstance") == ("False", "AwaitingLease")
    assert condition(expired, "Ready") == ("False", "AwaitingLease")
    assert condition(expired, "Reconciling") == ("True", "AwaitingLease")
    assert recheck_at(lease("primary/pod-a", renewed=5), expired, _t(16)) == _t(27)
    still = status(lease("primary/pod-a", renewed=5), at(26), expired)
    assert condition(still, "Ready") == ("False", "AwaitingLease")
    gone = status(lease("primary/pod-a", renewed=5), at(27), still)
    assert condition(gone, "Ready") == ("False", "NoActiveInstance")
    assert condition(gone, "Stalled") == ("True", "NoActiveInstance")
    message = find_condition(gone, "Ready")["message"]  # type: ignore[index]
    assert "last renewed by primary/pod-a at 2026-01-01T00:00:05.250000Z" in message
    assert "may get and update Lease b-jms-bridge in namespace apps" in message
    # Counted from when the operator first saw nobody: kept across reconciliations.
    assert find_condition(gone, "ActiveInstance")["lastTransitionTime"] == at(16)  # type: ignore[index]


def test_an_absent_lease_counts_from_when_the_applications_run() -> None:
    starting = status(ABSENT, at(0), applications=apps("SUBMITTED", "SUBMITTED"))
    assert condition(starting, "ActiveInstance") is None  # nothing runs: nobody can hold it yet
    assert condition(starting, "Ready") == ("False", "Starting")
    running = status(ABSENT, at(100), starting)
    assert condition(running, "Ready") == ("False", "AwaitingLease")
    assert "does not exist" in find_condition(running, "Ready")["message"]  # type: ignore[index]
    assert condition(status(ABSENT, at(111), running), "Ready") == ("False", "NoActiveInstance")


def test_an_instance_taking_the_lease_ends_no_active_instance() -> None:
    gone = status(ABSENT, at(111), status(ABSENT, at(100)))
    assert condition(gone, "Ready") == ("False", "NoActiveInstance")
    back = status(lease("secondary/pod-b", renewed=112), at(113), gone)
    assert condition(back, "Ready") == ("True", "Running") and condition(back, "Stalled") is None
    assert back["activeInstance"] == "b-secondary"


def test_a_holder_that_is_no_instance_of_the_bridge_is_no_active_instance() -> None:
    stolen = status(lease("thief/pod", renewed=5), at(6))
    assert "activeInstance" not in stolen
    ready = find_condition(stolen, "Ready")
    assert ready is not None and ready["reason"] == "AwaitingLease"
    assert "thief is no instance of this bridge" in ready["message"]


def test_a_failed_application_still_shows_when_the_other_holds_the_lease() -> None:
    degraded = status(lease("primary/pod-a", renewed=5), at(6), applications=apps("RUNNING", "FAILED"))
    assert condition(degraded, "Ready") == ("True", "Degraded")


def _t(seconds: int) -> datetime.datetime:
    moment = parse_time(at(seconds))
    assert moment is not None
    return moment


def test_only_a_new_holder_or_tenure_of_a_bridge_lease_triggers_a_reconciliation() -> None:
    from jmsbridge_operator.handlers.standby_pair import lease_changed

    memo: dict[str, Any] = {}

    def event(type_: str | None, holder: str, transitions: int, name: str = LEASE) -> tuple[str, str] | None:
        body = {
            "metadata": {"name": name},
            "spec": {"holderIdentity": holder, "leaseTransitions": transitions},
        }
        return lease_changed(type_, "apps", body, memo)

    assert event(None, "primary/a", 0) is None  # the initial listing: the resumption reads it anyway
    assert event("MODIFIED", "primary/a", 0) is None  # a renewal
    assert event("MODIFIED", "secondary/b", 1) == ("apps", "b")  # a new holder of bridge id `b`
    assert event("MODIFIED", "secondary/b", 2) == ("apps", "b")  # a new tenure
    assert event("DELETED", "secondary/b", 2) == ("apps", "b")
    assert event("ADDED", "kubelet", 0, name="node-1") is None  # no bridge's Lease
