"""A crash loop stays Stalled between restarts, and an instance that runs again for a while sheds its record.

Real kopf over HTTP against a real API server; the tests play the spark-operator (test_operator.py).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pytest

from testbed.apiserver.client import KubeApi
from testbed.resources import GROUP_VERSION, NAMESPACE, simple_bridge
from tests.operator.fixtures import chart_operator
from tests.operator.helpers import route
from tests.operator.test_operator import FAILED, RUNNING, View

pytestmark = pytest.mark.timeout(120)

WINDOW = 5.0  # the failure window: a short one, to see a record dropped within the test
ERROR = "Job aborted: KafkaException: _MSG_TIMED_OUT"


@pytest.fixture()
def view(cluster: KubeApi, no_kafka_checks: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[View]:
    monkeypatch.setenv("JMSBRIDGE_FAILURE_WINDOW", str(WINDOW))
    with chart_operator(cluster):
        yield View(cluster)


def instance(view: View) -> dict[str, Any]:
    instances = ((view.bridge("simple") or {}).get("status") or {}).get("instances") or [{}]
    return dict(instances[0])


def seen_in_state(view: View, state: str, attempts: int) -> dict[str, Any] | None:
    """The bridge once its status reports the application in `state` at `attempts`."""
    bridge = view.bridge("simple")
    now = instance(view)
    return bridge if (now.get("state"), now.get("attempts")) == (state, attempts) else None


def crash_loop(view: View) -> None:
    view.create(simple_bridge(), route("out"))
    view.wait(lambda: "simple-primary" in view.apps(), "the application")
    for attempt in (1, 2, 3):
        view.play_spark("simple-primary", "RUNNING", attempts=attempt)
        view.wait(functools.partial(seen_in_state, view, "RUNNING", attempt), f"running, attempt {attempt}")
        view.play_spark("simple-primary", "FAILED", ERROR, attempts=attempt)
        view.wait(functools.partial(seen_in_state, view, "FAILED", attempt), f"failed, attempt {attempt}")
    view.wait_conditions("JmsBridge", "simple", FAILED)


@pytest.mark.slow
def test_a_crash_loop_stays_stalled_until_the_instance_runs_again(view: View) -> None:
    crash_loop(view)

    # The spark-operator restarts it: no Starting in between, the bridge stays Stalled.
    for state in ("PENDING_RERUN", "SUBMITTED"):
        view.play_spark("simple-primary", state, attempts=4)
        bridge = view.wait(functools.partial(seen_in_state, view, state, 4), f"{state} in the status")
        assert view.conditions(bridge) == FAILED
        assert ERROR in view.message(bridge, "Stalled")
    reasons = [e[2] for e in view.events()]
    assert (reasons.count("ApplicationFailed"), reasons.count("Starting")) == (1, 0)  # no flapping

    # Running again ends the stall; the record goes once it has run for the failure window.
    view.play_spark("simple-primary", "RUNNING", attempts=4)
    view.wait_conditions("JmsBridge", "simple", RUNNING)
    assert instance(view)["failures"] == 3
    view.wait(lambda: "failures" not in instance(view), "the failure record dropped", timeout=WINDOW + 15)
    assert "lastFailure" not in instance(view)


def test_a_spec_change_ends_the_stall(view: View) -> None:
    crash_loop(view)
    view.play_spark("simple-primary", "PENDING_RERUN", attempts=4)
    view.wait(lambda: seen_in_state(view, "PENDING_RERUN", 4), "PENDING_RERUN in the status")
    spec = {"spec": {"spark": {"executor": {"instances": 2}}}}
    view.kube.patch(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE, spec)
    view.wait(
        lambda: "Stalled" not in view.conditions(view.bridge("simple")) and "failures" not in instance(view),
        "the stall ended by the new spec",
    )
