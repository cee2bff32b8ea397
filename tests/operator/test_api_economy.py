"""What the operator asks of the API server: a bridge costs the writes it needs, and no reads.

The real kopf runtime over HTTP against a real API server, whose audit log counts the operator's requests
by verb and resource (kopf's own and those of its kubernetes client), as `bench/operator_scale.py` does at
scale.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from jmsbridge_operator.options import ENV_GATHER_SECONDS, ENV_SETTLE_SECONDS
from prometheus_client import REGISTRY

from testbed.apiserver.client import KubeApi
from testbed.resources import GROUP_VERSION, NAMESPACE, simple_bridge
from tests.operator.helpers import route
from tests.operator.test_operator import ACCEPTED, RUNNING, STARTING, View

pytestmark = pytest.mark.timeout(120)

OPERATOR_AGENTS = ("kopf", "OpenAPI-Generator")
READS = ("get", "list")
RECONCILES = "jmsbridge_operator_reconciles_total"
CHILDREN_AND_BRIDGES = ("jmsbridges", "configmaps", "sparkapplications", "leases", "persistentvolumeclaims")


@pytest.fixture(autouse=True)
def brief_gathering(monkeypatch: pytest.MonkeyPatch) -> None:
    """The deployed gathering, not the operator tests' brief one (tests/operator/conftest.py): these tests
    count the writes of one apply."""
    monkeypatch.delenv(ENV_SETTLE_SECONDS, raising=False)
    monkeypatch.delenv(ENV_GATHER_SECONDS, raising=False)


@pytest.fixture()
def view(operator: KubeApi) -> View:
    return View(operator)


def asked(kube: KubeApi, since: dict[str, int]) -> dict[str, int]:
    """The operator's requests since `since`, by `verb resource`."""
    now = kube.requests_by_resource(*OPERATOR_AGENTS)
    return {what: count - since.get(what, 0) for what, count in now.items() if count > since.get(what, 0)}


def reads(requests: dict[str, int]) -> dict[str, int]:
    """GETs and LISTs of bridges and their children, but the listing that starts each watch (kopf's
    watches end after a while and start again)."""
    found = {}
    for what, count in requests.items():
        verb, resource = what.split()
        if resource in CHILDREN_AND_BRIDGES and verb in READS:
            count -= requests.get(f"watch {resource}", 0) if verb == "list" else 0
            if count > 0:
                found[what] = count
    return found


def reconciliations() -> float:
    return REGISTRY.get_sample_value(RECONCILES, {"kind": "bridge", "result": "ok"}) or 0.0


def settled(view: View, since: dict[str, int]) -> dict[str, int]:
    """The requests once the operator has asked nothing more for a second (its last Events posted)."""
    last: list[Any] = [None, 0.0]

    def quiet() -> bool:
        now = asked(view.kube, since)
        if now != last[0]:
            last[:] = [now, time.monotonic()]
            return False
        return bool(time.monotonic() - last[1] >= 1.0)

    view.wait(quiet, "the operator to settle")
    result: dict[str, int] = last[0]
    return result


def test_a_new_bridge_costs_its_writes_and_no_read(view: View) -> None:
    before = view.kube.requests_by_resource(*OPERATOR_AGENTS)
    view.create(simple_bridge(), *(route(f"r{i}", order=i) for i in (1, 2, 3)))
    for name in ("r1", "r2", "r3"):
        view.wait_conditions("JmsBridgeRoute", name, ACCEPTED)
    view.wait_conditions("JmsBridge", "simple", STARTING)
    view.play_spark("simple-primary", "RUNNING")
    view.wait_conditions("JmsBridge", "simple", RUNNING)
    requests = settled(view, before)

    assert reads(requests) == {}  # the watches said it all
    # The routes of one apply make one ConfigMap write; kopf patches the bridge once (its finalizer).
    assert requests.get("create configmaps") == 1 and "update configmaps" not in requests
    assert requests.get("create sparkapplications") == 1
    assert requests.get("patch jmsbridges") == 1
    assert requests.get("patch jmsbridges/status") == 2  # Starting, then Running
    assert requests.get("patch jmsbridgeroutes/status") == 3
    # ConfigCreated (naming the routes accepted), ApplicationCreated, Running
    assert requests.get("create events") == 3
    reasons = sorted(reason for _, _, reason in view.events())
    assert reasons == ["ApplicationCreated", "ConfigCreated", "Running"]
    created = [e for e in view.kube.list("v1", "Event", NAMESPACE) if e["reason"] == "ConfigCreated"]
    assert "3 routes: r1, r2, r3" in created[0]["message"]


def test_a_reconciliation_that_changes_nothing_asks_nothing(view: View) -> None:
    view.create(simple_bridge(), route("out"))
    view.wait(lambda: "simple-primary" in view.apps(), "the application")
    view.play_spark("simple-primary", "RUNNING")
    view.wait_conditions("JmsBridge", "simple", RUNNING)
    settled(view, view.kube.requests_by_resource(*OPERATOR_AGENTS))  # its Running Event posted
    before, done = view.kube.requests_by_resource(*OPERATOR_AGENTS), reconciliations()
    # A change kopf hands to the update handler, which changes nothing the operator writes.
    view.kube.patch(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE, {"metadata": {"labels": {"team": "a"}}})
    view.wait(lambda: reconciliations() > done, "the reconciliation")
    requests = settled(view, before)
    assert reads(requests) == {}
    assert {what for what in requests if not what.startswith(("list ", "watch "))} == set()  # no write


def test_a_route_refused_at_once_still_posts_its_warning(view: View) -> None:
    view.create(simple_bridge(), route("one", order=1), route("two", order=1))
    view.wait(
        lambda: any(reason == "DuplicateOrder" for _, _, reason in view.events()), "the refusal's Event"
    )
    events = [(name, type_, reason) for name, type_, reason in view.events() if name in ("one", "two")]
    assert len(events) == 1 and events[0][1:] == ("Warning", "DuplicateOrder")  # the other: accepted
