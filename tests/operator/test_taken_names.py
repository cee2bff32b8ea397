"""A child name the operator finds taken: adopted when the object is ours, NameConflict with backoff if not.

Real kopf over HTTP against a real API server, as in test_operator.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from jmsbridge_operator import naming
from jmsbridge_operator.taken_names import Backoff

from testbed.apiserver.client import KubeApi
from testbed.resources import GROUP_VERSION, NAMESPACE, simple_bridge
from tests.operator.fixtures import chart_operator
from tests.operator.helpers import SPARK_VERSION, route
from tests.operator.test_operator import RUNNING, STARTING, View

pytestmark = pytest.mark.timeout(120)

APPLICATIONS = "sparkapplications"
NAME_CONFLICT = {"Ready": ("False", "NameConflict"), "Stalled": ("True", "NameConflict")}
FIRST_STEP, CAP = 1.0, 4.0


@pytest.fixture()
def view(cluster: KubeApi, no_kafka_checks: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[View]:
    monkeypatch.setenv("JMSBRIDGE_CONFLICT_BACKOFF", str(FIRST_STEP))
    monkeypatch.setenv("JMSBRIDGE_CONFLICT_BACKOFF_MAX", str(CAP))
    with chart_operator(cluster):
        yield View(cluster)


def test_backoff_doubles_up_to_its_cap() -> None:
    assert [Backoff(1, 4).delay(n) for n in (1, 2, 3, 4, 50)] == [1, 2, 4, 4, 4]


def test_an_application_whose_labels_were_removed_is_adopted_again(view: View) -> None:
    view.create(simple_bridge(), route("out"))
    view.wait(lambda: "simple-primary" in view.apps(), "the application")
    view.play_spark("simple-primary", "RUNNING", attempts=1)
    view.wait_conditions("JmsBridge", "simple", RUNNING)
    labels = view.apps()["simple-primary"]["metadata"]["labels"]

    stripped = {naming.LABEL_BRIDGE: None, naming.LABEL_MANAGED_BY: None}
    view.kube.patch(
        SPARK_VERSION, "SparkApplication", "simple-primary", NAMESPACE, {"metadata": {"labels": stripped}}
    )
    view.wait(lambda: view.apps()["simple-primary"]["metadata"]["labels"] == labels, "the labels put back")
    event = view.wait(
        lambda: next(
            (e for e in view.kube.list("v1", "Event", NAMESPACE) if e["reason"] == "DriftRepaired"), None
        ),
        "a DriftRepaired Event",
    )
    assert event["type"] == "Warning"
    assert "Restored the labels of SparkApplication simple-primary" in event["message"]
    assert view.conditions(view.bridge("simple")) == RUNNING
    assert view.apps()["simple-primary"]["metadata"]["generation"] == 1  # its spec untouched: no restart


@pytest.mark.slow
def test_a_name_held_by_another_owner_is_a_conflict_looked_at_with_backoff(view: View) -> None:
    squatter = {
        "apiVersion": SPARK_VERSION,
        "kind": "SparkApplication",
        "metadata": {"name": "simple-primary", "namespace": NAMESPACE},
        "spec": {  # what the spark-operator's CRD requires of any application
            "type": "Python",
            "mode": "cluster",
            "sparkVersion": "4.0.0",
            "mainApplicationFile": "local:///opt/app.py",
            "driver": {},
            "executor": {},
        },
    }
    view.create(squatter, simple_bridge(), route("out"))
    bridge = view.wait_conditions("JmsBridge", "simple", NAME_CONFLICT)
    assert "SparkApplication simple-primary already exists and is not owned by this bridge" in view.message(
        bridge, "Stalled"
    )
    view.wait(lambda: ("simple", "Warning", "NameConflict") in view.events(), "a Warning Event")

    # One look per backoff step (1, 2, 4, 4... s after the first), and no create retried meanwhile: three
    # more looks take at least 1 + 2 + 4 s (less a second of the first step that may be over already).
    creates = view.kube.requests_to("POST", APPLICATIONS)
    looks = view.kube.requests_to("GET", APPLICATIONS, "simple-primary")
    started = time.monotonic()
    view.wait(
        lambda: view.kube.requests_to("GET", APPLICATIONS, "simple-primary") >= looks + 3,
        "three more looks",
        timeout=30,
    )
    assert time.monotonic() - started >= 6.0
    assert view.kube.requests_to("POST", APPLICATIONS) == creates
    assert [e for e in view.events() if e[2] == "NameConflict"] == [("simple", "Warning", "NameConflict")]
    assert view.conditions(view.bridge("simple")) == NAME_CONFLICT

    # The name freed, the bridge gets its application within a step of the capped backoff.
    view.kube.delete(SPARK_VERSION, "SparkApplication", "simple-primary", NAMESPACE)
    view.wait(
        lambda: (a := view.apps().get("simple-primary")) and a["metadata"].get("ownerReferences"),
        "the bridge's own application",
        timeout=CAP + 10,
    )
    view.wait_conditions("JmsBridge", "simple", STARTING)
    assert view.kube.get(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE) is not None
