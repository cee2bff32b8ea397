"""A standby pair's status follows its Lease: the real kopf operator on a real API server.

No spark-operator runs here: the tests play it by patching `status.applicationState` of the
SparkApplications the operator created (both RUNNING, as it would report two healthy drivers). The Lease
is written by the test itself, as the jobs would write it; tests/e2e/test_leadership.py has it written by
the real job processes (`jmsbridge job`, local Spark, real ActiveMQ and Apache Kafka).
"""

from __future__ import annotations

from typing import Any

import pytest

from testbed.apiserver.client import KubeApi
from testbed.resources import CHECKPOINT_CLAIM, NAMESPACE, simple_bridge
from tests.operator.helpers import claim
from tests.operator.test_operator import View

pytestmark = pytest.mark.timeout(120)

NO_ACTIVE = {"Ready": ("False", "NoActiveInstance"), "Stalled": ("True", "NoActiveInstance")}
AWAITING = {"Ready": ("False", "AwaitingLease"), "Reconciling": ("True", "AwaitingLease")}


@pytest.fixture()
def view(operator: KubeApi) -> View:
    return View(operator)


def both_running(view: View, bridge: str) -> None:
    view.wait(lambda: len(view.apps()) == 2, "two SparkApplications")
    for instance in ("primary", "secondary"):
        view.play_spark(f"{bridge}-{instance}", "RUNNING")


def status_of(view: View, bridge: str) -> dict[str, Any]:
    return dict((view.bridge(bridge) or {}).get("status") or {})


def failover_events(view: View, bridge: str) -> list[str]:
    items = view.kube.list("v1", "Event", NAMESPACE)
    return [
        str(e["message"])
        for e in items
        if e["involvedObject"]["name"] == bridge and e["reason"] == "Failover" and e["type"] == "Warning"
    ]


@pytest.mark.slow
def test_nobody_holding_the_lease_past_its_duration_is_no_active_instance(view: View) -> None:
    view.create(simple_bridge(standby=True), claim())
    both_running(view, "simple")
    # The primary took the lease and stopped renewing it (a crash): 2 s, the shortest duration allowed.
    view.play_lease("simple", "primary/simple-primary-driver", duration=2)
    view.wait(lambda: status_of(view, "simple").get("activeInstance") == "simple-primary", "primary active")
    # Nobody renews: it runs out after 2 s; nobody takes it over for 2 s more.
    bridge = view.wait_conditions("JmsBridge", "simple", NO_ACTIVE)
    message = view.message(bridge)
    assert "No instance has held the Lease for more than 2s while the applications run" in message
    assert (
        "Lease apps-simple-jms-bridge in namespace apps was last renewed by primary/simple-primary-driver"
        in message
    )
    assert "activeInstance" not in bridge["status"]
    view.wait(lambda: ("simple", "Warning", "NoActiveInstance") in view.events(), "a Warning Event")

    # The standby takes over: the bridge is running again, and that was a failover.
    view.play_lease("simple", "secondary/simple-secondary-driver", transitions=1)
    bridge = view.wait_conditions("JmsBridge", "simple", {"Ready": ("True", "Running")})
    assert bridge["status"]["activeInstance"] == "simple-secondary"
    assert bridge["status"]["failovers"] == 1
    lease = view.kube.get("coordination.k8s.io/v1", "Lease", "apps-simple-jms-bridge", NAMESPACE) or {}
    assert bridge["status"]["lastFailoverTime"] == lease["spec"]["acquireTime"]
    events = view.wait(lambda: failover_events(view, "simple"), "a Failover Event")
    assert "primary/simple-primary-driver -> secondary/simple-secondary-driver" in events[0]


def test_an_untaken_lease_while_the_applications_run_is_awaited_then_reported(view: View) -> None:
    body = simple_bridge(standby=True)
    body["spec"]["failover"]["leaseDurationSeconds"] = 2
    view.create(body, claim())
    both_running(view, "simple")
    view.wait_conditions("JmsBridge", "simple", AWAITING)
    bridge = view.wait_conditions("JmsBridge", "simple", NO_ACTIVE)
    # the operator made it free (identity.py): the jobs take it, and here none does
    assert "Lease apps-simple-jms-bridge in namespace apps has never been held" in view.message(bridge)


def test_the_status_says_whether_the_checkpoint_claim_can_be_shared(view: View) -> None:
    view.create(simple_bridge(standby=True))

    def shared() -> tuple[str, str] | None:
        return view.conditions(view.bridge("simple"), every=True).get("CheckpointShared")

    view.wait(lambda: shared() == ("False", "CheckpointClaimNotFound"), "the claim reported missing")
    view.create(claim(CHECKPOINT_CLAIM, "ReadWriteOnce"))
    view.wait(lambda: shared() == ("False", "CheckpointNotShared"), "the claim reported unshareable")
    message = view.message(view.bridge("simple"), "CheckpointShared")
    assert (
        f"PersistentVolumeClaim {CHECKPOINT_CLAIM} in namespace apps has accessModes [ReadWriteOnce]"
        in message
    )
    view.kube.delete("v1", "PersistentVolumeClaim", CHECKPOINT_CLAIM, NAMESPACE)
    view.wait(lambda: shared() == ("False", "CheckpointClaimNotFound"), "the claim reported gone")
    view.create(claim())
    view.wait(lambda: shared() == ("True", "ReadWriteMany"), "the claim reported shared")


def test_a_standby_pair_without_a_checkpoint_claim_is_refused(view: View) -> None:
    body = simple_bridge(standby=True)
    del body["spec"]["spark"]
    view.create(body)
    bridge = view.wait_conditions(
        "JmsBridge", "simple", {"Ready": ("False", "InvalidSpec"), "Stalled": ("True", "InvalidSpec")}
    )
    assert "spec.spark.checkpoint.persistentVolumeClaim: failover.standby needs a checkpoint" in view.message(
        bridge
    )
    assert view.apps() == {}


# ---------------------------------------------------------------------------------------------------
# Two real jobs fight for the Lease
