"""A rollout whose standby fails the new spec, or does not run it in time, is Stalled RolloutFailed while the
active instance keeps the previous spec; its Events say so once, not on every restart of the standby.

Real kopf over HTTP against a real API server; the tests play the spark-operator and the Lease.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import pytest

from testbed.apiserver.client import KubeApi
from testbed.resources import GROUP_VERSION, NAMESPACE, simple_bridge
from tests.operator.fixtures import chart_operator
from tests.operator.helpers import route
from tests.operator.test_operator import PRIMARY, RUNNING, View

pytestmark = pytest.mark.timeout(120)

ROLLOUT_FAILED = {"Ready": ("True", "RolloutFailed"), "Stalled": ("True", "RolloutFailed")}
ROLLING_OUT = {"Ready": ("True", "Running"), "Reconciling": ("True", "RollingOut")}
ERROR = "Job aborted: bad option spark.foo"


@contextlib.contextmanager
def operator_with_deadline(
    cluster: KubeApi, monkeypatch: pytest.MonkeyPatch, deadline: float
) -> Iterator[View]:
    monkeypatch.setenv("JMSBRIDGE_ROLLOUT_DEADLINE", str(deadline))
    with chart_operator(cluster):
        yield View(cluster)


def roll_out(view: View) -> None:
    """A running standby pair, the primary active, then a change of the bridge's spec."""
    view.create(simple_bridge(standby=True), route("out"))
    view.wait(lambda: len(view.apps()) == 2, "two SparkApplications")
    view.play_spark("simple-primary", "RUNNING", attempts=1)
    view.play_lease("simple", PRIMARY)
    view.play_spark("simple-secondary", "RUNNING", attempts=1)
    view.wait_conditions("JmsBridge", "simple", RUNNING)
    spec = {"spec": {"spark": {"executor": {"instances": 3}}}}
    view.kube.patch(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE, spec)
    view.wait(
        lambda: view.apps()["simple-secondary"]["spec"]["executor"]["instances"] == 3, "standby updated"
    )


def standby_failures(view: View, count: int) -> bool:
    instances = ((view.bridge("simple") or {}).get("status") or {}).get("instances") or []
    return len(instances) == 2 and instances[1].get("failures") == count


def active_untouched(view: View) -> None:
    primary = view.apps()["simple-primary"]
    assert primary["spec"]["executor"]["instances"] == 1
    assert primary["metadata"]["generation"] == 1


def test_a_standby_failing_the_new_spec_fails_the_rollout_once(
    cluster: KubeApi, no_kafka_checks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with operator_with_deadline(cluster, monkeypatch, 300) as view:
        roll_out(view)
        for attempt in (2, 3, 4):  # the spark-operator resubmits it, it crashes the same way
            view.play_spark("simple-secondary", "SUBMITTED", attempts=attempt)
            view.play_spark("simple-secondary", "FAILED", ERROR, attempts=attempt)
            view.wait(functools.partial(standby_failures, view, attempt - 1), f"failure {attempt - 1} seen")
        bridge = view.wait_conditions("JmsBridge", "simple", ROLLOUT_FAILED)
        message = view.message(bridge, "Stalled")
        assert "simple-secondary (secondary) failed with the new spec 3 times" in message
        assert ERROR in message and "simple-primary keeps running the previous spec" in message
        assert bridge["status"]["activeInstance"] == "simple-primary"

        view.play_spark("simple-secondary", "PENDING_RERUN", attempts=4)  # restarted: still failed
        view.wait(
            lambda: (
                [i["state"] for i in (view.bridge("simple") or {})["status"]["instances"]][1]
                == "PENDING_RERUN"
            ),
            "the restart seen",
        )
        assert view.conditions(view.bridge("simple")) == ROLLOUT_FAILED
        active_untouched(view)
        reasons = [r for _, _, r in view.events()]
        assert reasons.count("RolloutFailed") == 1
        assert "Degraded" not in reasons  # the standby's crashes did not flap Ready


@pytest.mark.slow
def test_a_standby_not_running_the_new_spec_in_time_fails_the_rollout(
    cluster: KubeApi, no_kafka_checks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with operator_with_deadline(cluster, monkeypatch, 3) as view:
        roll_out(view)
        view.wait_conditions("JmsBridge", "simple", ROLLING_OUT)
        view.play_spark("simple-secondary", "SUBMITTED", attempts=2)  # and never RUNNING
        bridge = view.wait_conditions("JmsBridge", "simple", ROLLOUT_FAILED)
        assert "simple-secondary did not run the new spec within 3 s" in view.message(bridge, "Stalled")
        active_untouched(view)

        view.play_spark("simple-secondary", "RUNNING", attempts=2)  # late, but it runs: the rollout goes on
        view.wait(
            lambda: view.apps()["simple-primary"]["spec"]["executor"]["instances"] == 3, "the active's turn"
        )
