"""Failure semantics: a failure the spark-operator retries is Reconciling, a repeated one Stalled (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from jmsbridge_operator.render import RESTART_POLICY
from jmsbridge_operator.restarts import FAILURE_THRESHOLD, FAILURE_WINDOW_SECONDS, Attempts, will_retry
from jmsbridge_operator.status import ApplicationState, BridgeOutcome, bridge_status, find_condition

RESTARTING = {"Ready": ("False", "ApplicationRestarting"), "Reconciling": ("True", "ApplicationRestarting")}
STALLED = {"Ready": ("False", "ApplicationFailed"), "Stalled": ("True", "ApplicationFailed")}
RUNNING = {"Ready": ("True", "Running")}


def body(state: str, attempts: int, error: str = "driver OOMKilled", policy: Any = None) -> dict[str, Any]:
    return {
        "spec": {"restartPolicy": dict(RESTART_POLICY) if policy is None else policy},
        "status": {
            "applicationState": {"state": state, "errorMessage": error} if error else {"state": state},
            "executionAttempts": attempts,
            "submissionAttempts": attempts,
            "lastSubmissionAttemptTime": f"2026-01-01T00:0{attempts}:00Z",
        },
    }


def at(minute: int) -> str:
    return f"2026-01-01T{minute // 60:02d}:{minute % 60:02d}:00Z"


class Bridge:
    """One instance's applications observed one after another, each status computed from the last."""

    def __init__(self) -> None:
        self.status: dict[str, Any] | None = None

    def sees(self, app: dict[str, Any], minute: int) -> dict[str, tuple[str, str]]:
        state = ApplicationState.observe("primary", "b-primary", app)
        outcome = BridgeOutcome(generation=1, bridge_id="b", applications=(state,), routes=("r",))
        self.status = bridge_status(outcome, self.status, at(minute))
        return {c["type"]: (c["status"], c["reason"]) for c in self.status["conditions"]}

    @property
    def instance(self) -> dict[str, Any]:
        assert self.status is not None
        instance: dict[str, Any] = self.status["instances"][0]
        return instance


def test_a_failure_the_spark_operator_retries_is_reconciling_with_attempts_and_start_time() -> None:
    bridge = Bridge()
    assert bridge.sees(body("RUNNING", 1, error=""), 0) == RUNNING
    assert (bridge.instance["attempts"], bridge.instance["startTime"]) == (1, "2026-01-01T00:01:00Z")
    assert bridge.sees(body("FAILED", 1), 1) == RESTARTING
    assert bridge.instance["failures"] == 1
    ready = find_condition(bridge.status, "Ready")
    assert ready is not None and ready["message"] == (
        "SparkApplication b-primary is FAILED: driver OOMKilled; the spark-operator restarts it "
        f"(failure 1 of {FAILURE_THRESHOLD} before the bridge stalls)."
    )
    assert bridge.sees(body("FAILED", 1), 2) == RESTARTING  # the same failure seen again counts once
    assert bridge.instance["failures"] == 1
    assert bridge.sees(body("RUNNING", 2, error=""), 3) == RUNNING


def test_the_same_failure_in_a_row_stalls_at_the_threshold() -> None:
    bridge = Bridge()
    for attempt in range(1, FAILURE_THRESHOLD):
        assert bridge.sees(body("FAILED", attempt), attempt) == RESTARTING
        assert bridge.sees(body("RUNNING", attempt + 1, error=""), attempt) == RUNNING  # briefly up
    assert bridge.sees(body("FAILED", FAILURE_THRESHOLD), FAILURE_THRESHOLD) == STALLED
    assert bridge.instance["failures"] == FAILURE_THRESHOLD
    assert "the same failure 3 times in a row: restarting does not help" in str(
        (find_condition(bridge.status, "Stalled") or {})["message"]
    )
    assert bridge.sees(body("RUNNING", 4, error=""), 5) == RUNNING  # it recovered after all


def test_other_failures_and_failures_far_apart_start_a_new_count() -> None:
    bridge = Bridge()
    bridge.sees(body("FAILED", 1), 0)
    bridge.sees(body("FAILED", 2), 1)
    assert bridge.instance["failures"] == 2
    assert bridge.sees(body("FAILED", 3, error="Kafka unreachable"), 2) == RESTARTING
    assert bridge.instance["failures"] == 1
    later = 2 + FAILURE_WINDOW_SECONDS // 60 + 1
    assert bridge.sees(body("FAILED", 4, error="Kafka unreachable"), later) == RESTARTING
    assert bridge.instance["failures"] == 1


@pytest.mark.parametrize(
    ("policy", "state", "attempts", "retried"),
    [
        ({"type": "Always"}, "FAILED", Attempts(50, 50), True),
        ({"type": "Always"}, "COMPLETED", Attempts(1, 1), True),
        ({"type": "Never"}, "FAILED", Attempts(1, 1), False),
        (None, "FAILED", Attempts(1, 1), False),  # the spark-operator's default is Never
        ({"type": "OnFailure", "onFailureRetries": 2}, "FAILED", Attempts(2, 2), True),
        ({"type": "OnFailure", "onFailureRetries": 2}, "FAILED", Attempts(3, 3), False),
        ({"type": "OnFailure"}, "FAILED", Attempts(1, 1), False),
        ({"type": "OnFailure", "onFailureRetries": 2}, "COMPLETED", Attempts(1, 1), False),
        ({"type": "OnFailure", "onSubmissionFailureRetries": 1}, "SUBMISSION_FAILED", Attempts(0, 1), True),
        ({"type": "OnFailure", "onSubmissionFailureRetries": 1}, "SUBMISSION_FAILED", Attempts(0, 2), False),
    ],
)
def test_the_restart_policy_decides_whether_a_failure_is_retried(
    policy: dict[str, Any] | None, state: str, attempts: Attempts, retried: bool
) -> None:
    assert will_retry(policy, state, attempts) is retried


def test_a_policy_that_gives_up_stalls_at_once() -> None:
    bridge = Bridge()
    policy = {"type": "OnFailure", "onFailureRetries": 1}
    assert bridge.sees(body("FAILED", 1, policy=policy), 0) == RESTARTING
    assert bridge.sees(body("FAILED", 2, error="other", policy=policy), 1) == STALLED
    assert "its restartPolicy restarts it no more" in str(
        (find_condition(bridge.status, "Ready") or {})["message"]
    )
