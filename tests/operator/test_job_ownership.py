"""What a bridge's jobs create (its Lease, its health ConfigMap) is the bridge's: deleted with it, and a
bridge re-created under the same name starts with a clean status.

Real kopf over HTTP against a real API server (which collects garbage by ownerReference). The job's own
code writes the Lease and the health report, with the environment the operator rendered for the driver.
"""

from __future__ import annotations

from typing import Any

import pytest

from bridge_job.config import ENV_OWNER_NAME, ENV_OWNER_UID, lease_name
from bridge_job.kube.health import HealthConfigMap
from bridge_job.kube.leadership import KubernetesLeases, Leadership
from bridge_job.kube.ownership import LABEL_BRIDGE_ID
from testbed.apiserver.chart import job_client
from testbed.apiserver.client import KubeApi
from testbed.resources import GROUP_VERSION, NAMESPACE, simple_bridge
from tests.operator.helpers import default_id, route
from tests.operator.test_operator import LEASES, PRIMARY, SECONDARY, View

pytestmark = pytest.mark.timeout(120)

HEALTH = f"{default_id('simple')}-jms-bridge-health"


@pytest.fixture()
def view(operator: KubeApi) -> View:
    return View(operator)


def driver_env(view: View) -> dict[str, str]:
    app = view.wait(lambda: view.apps().get("simple-primary"), "the application")
    return {e["name"]: e.get("value", "") for e in app["spec"]["driver"].get("env", [])}


def run_jobs(view: View, monkeypatch: pytest.MonkeyPatch) -> Leadership:
    """The primary's job takes the Lease and reports its health, as in the driver the operator rendered;
    it goes on renewing the Lease until the test stops it."""
    for name, value in driver_env(view).items():
        if name in (ENV_OWNER_NAME, ENV_OWNER_UID):
            monkeypatch.setenv(name, value)
    kube = job_client(view.kube, NAMESPACE, "simple", operator=True)  # as the bridge's pods
    leases = KubernetesLeases(NAMESPACE, lease_name(default_id("simple")), kube)
    leadership = Leadership(leases, PRIMARY, 300, labels={LABEL_BRIDGE_ID: "simple"})
    assert leadership.try_acquire()
    report = HealthConfigMap(kube, NAMESPACE, default_id("simple"), "primary")
    try:
        report.report_stop("Test", "written by the job's own code")
    finally:
        report.stop()
    return leadership


def status(view: View) -> dict[str, Any]:
    return dict((view.bridge("simple") or {}).get("status") or {})


def test_the_jobs_objects_go_with_the_bridge_and_a_new_bridge_starts_clean(
    view: View, monkeypatch: pytest.MonkeyPatch
) -> None:
    view.create(simple_bridge(standby=True), route("out"))
    bridge = view.wait(lambda: view.bridge("simple"), "the bridge")
    env = driver_env(view)
    assert (env[ENV_OWNER_NAME], env[ENV_OWNER_UID]) == ("simple", bridge["metadata"]["uid"])

    primary = run_jobs(view, monkeypatch)
    try:
        check_ownership(view, bridge)
    finally:
        primary.stop(release=False)  # a job whose pod went with the bridge


def check_ownership(view: View, bridge: dict[str, Any]) -> None:
    view.play_spark("simple-primary", "RUNNING", attempts=1)
    view.play_spark("simple-secondary", "RUNNING", attempts=1)
    view.play_lease("simple", SECONDARY, transitions=1)  # a failover
    view.wait(lambda: status(view).get("failovers") == 1, "the failover in the status")
    for kind, name in (("Lease", lease_name(default_id("simple"))), ("ConfigMap", HEALTH)):
        owner = (view.kube.get(LEASES if kind == "Lease" else "v1", kind, name, NAMESPACE) or {})["metadata"]
        assert [(o["kind"], o["uid"]) for o in owner["ownerReferences"]] == [
            ("JmsBridge", bridge["metadata"]["uid"])
        ]

    view.kube.delete(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE)
    view.wait(lambda: view.bridge("simple") is None, "the bridge gone")
    view.wait(
        lambda: view.kube.get(LEASES, "Lease", lease_name(default_id("simple")), NAMESPACE) is None,
        "Lease gone",
    )
    view.wait(lambda: view.kube.get("v1", "ConfigMap", HEALTH, NAMESPACE) is None, "health report gone")

    view.create(simple_bridge(standby=True))
    view.wait(lambda: len(view.apps()) == 2, "the new bridge's applications")
    view.play_spark("simple-primary", "RUNNING", attempts=1)
    view.wait(
        lambda: [i["state"] for i in status(view).get("instances") or []] == ["RUNNING", "NEW"],
        "the new bridge's status",
    )
    fresh = status(view)
    assert fresh.get("failovers", 0) == 0
    assert "leaseHolder" not in fresh and "lastFailoverTime" not in fresh
