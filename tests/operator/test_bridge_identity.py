"""Each bridge is its own identity (jmsbridge_operator/identity.py): the operator, under exactly the chart's
RBAC, makes a bridge's ServiceAccount, Role, RoleBindings, Lease and key Secret, owned by the bridge; one
bridge's pods may write their own Lease and health ConfigMap and not another bridge's of the same
namespace, tried as that bridge's pods would (their token) and asked of the API server (a
SubjectAccessReview). Deleting the key Secret rotates the key: a new one, and the applications roll.

Real kopf over HTTP against a real API server; the job's own code writes the Lease and the health report.
"""

from __future__ import annotations

from typing import Any

import pytest
from jmsbridge_operator import naming

from bridge_job.config import lease_name
from bridge_job.kube.api import LEASES as LEASES_RESOURCE
from bridge_job.kube.api import ApiError
from bridge_job.kube.health import HealthConfigMap
from bridge_job.kube.leadership import KubernetesLeases, Leadership
from bridge_job.kube.ownership import LABEL_BRIDGE_ID
from testbed.apiserver.chart import job_client
from testbed.apiserver.client import KubeApi
from testbed.resources import NAMESPACE, simple_bridge
from tests.operator.helpers import route
from tests.operator.test_operator import LEASES, PRIMARY, View

pytestmark = pytest.mark.timeout(120)

RBAC = "rbac.authorization.k8s.io/v1"


@pytest.fixture()
def view(operator: KubeApi) -> View:
    return View(operator)


def bridge(name: str) -> dict[str, Any]:
    """A standby pair whose bridge id is its name (said, not left to the default's rules)."""
    body = simple_bridge(name, standby=True)
    body["spec"]["bridgeId"] = name
    return body


def identity_of(view: View, name: str, standby: bool = True) -> dict[tuple[str, str], dict[str, Any]]:
    """The bridge's identity as stored, once the operator has made all of it (a Lease: with a standby)."""
    wanted = [
        ("v1", "ServiceAccount", f"{name}-job"),
        (RBAC, "Role", f"{name}-job"),
        (RBAC, "RoleBinding", f"{name}-job"),
        (RBAC, "RoleBinding", f"{name}-spark"),
        (LEASES, "Lease", lease_name(name)),
        ("v1", "Secret", f"{name}-key"),
    ]
    if not standby:
        wanted = [w for w in wanted if w[1] != "Lease"]

    def made() -> dict[tuple[str, str], dict[str, Any]] | None:
        found = {(kind, n): view.kube.get(v, kind, n, NAMESPACE) for v, kind, n in wanted}
        return None if None in found.values() else {k: v for k, v in found.items() if v is not None}

    found: dict[tuple[str, str], dict[str, Any]] = view.wait(made, f"the identity of bridge {name}")
    return found


def allowed(kube: KubeApi, account: str, verb: str, resource: str, name: str, group: str = "") -> bool:
    """What the API server says the account may do (a SubjectAccessReview, as its admin)."""
    review = kube.create(
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": f"system:serviceaccount:{NAMESPACE}:{account}",
                "resourceAttributes": {
                    "namespace": NAMESPACE,
                    "verb": verb,
                    "group": group,
                    "resource": resource,
                    "name": name,
                },
            },
        }
    )
    return bool(review["status"].get("allowed"))


def forbidden(write: Any) -> bool:
    try:
        write()
    except ApiError as error:
        return error.status == 403
    return False


def check_identity(view: View, name: str) -> None:
    """The bridge's identity is its own, goes with it, and is what its applications run as."""
    uid = view.wait(lambda: view.bridge(name), f"bridge {name}")["metadata"]["uid"]
    made = identity_of(view, name)
    for (kind, _), obj in made.items():
        assert [o["uid"] for o in obj["metadata"]["ownerReferences"]] == [uid], kind  # goes with it
    role = made[("Role", f"{name}-job")]
    assert {n for rule in role["rules"] for n in rule["resourceNames"]} == {
        lease_name(name),
        f"{name}-jms-bridge-health",
    }
    assert made[("RoleBinding", f"{name}-spark")]["roleRef"]["name"] == naming.JOB_CLUSTER_ROLE
    assert made[("Lease", lease_name(name))]["metadata"]["labels"] == {LABEL_BRIDGE_ID: name}
    names = (f"{name}-primary", f"{name}-secondary")
    view.wait(lambda: set(names) <= set(view.apps()), f"{name}'s applications")
    for app in (view.apps()[n] for n in names):
        spec = app["spec"]
        assert spec["driver"]["serviceAccount"] == spec["executor"]["serviceAccount"] == f"{name}-job"
        keys = [e for e in spec["driver"]["env"] if e["name"] == "JMSBRIDGE_BRIDGE_KEY"]
        assert keys[0]["valueFrom"]["secretKeyRef"]["name"] == f"{name}-key"


def test_each_bridge_gets_its_own_identity_and_may_not_write_another_s_lease_or_health(view: View) -> None:
    view.create(bridge("alpha"), bridge("beta"), route("out", "alpha"), route("out-b", "beta"))
    for name in ("alpha", "beta"):
        check_identity(view, name)
    keys = [view.kube.get("v1", "Secret", f"{n}-key", NAMESPACE) or {} for n in ("alpha", "beta")]
    assert keys[0]["data"]["key"] != keys[1]["data"]["key"]

    # As alpha's pods: their own Lease and health report...
    alpha = job_client(view.kube, NAMESPACE, "alpha", operator=True)
    mine = Leadership(KubernetesLeases(NAMESPACE, lease_name("alpha"), alpha), PRIMARY, 300)
    assert mine.try_acquire()
    mine.stop()
    HealthConfigMap(alpha, NAMESPACE, "alpha", "primary").report_stop("Test", "alpha's own report")
    assert "primary" in (view.kube.get("v1", "ConfigMap", "alpha-jms-bridge-health", NAMESPACE) or {})["data"]

    # ...and not beta's: its Lease can be neither taken nor deleted, its report neither written nor made.
    view.kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "beta-jms-bridge-health", "namespace": NAMESPACE},
            "data": {},
        }
    )
    theirs = KubernetesLeases(NAMESPACE, lease_name("beta"), alpha)
    lease = view.kube.get(LEASES, "Lease", lease_name("beta"), NAMESPACE) or {}
    held = {**lease, "spec": {"holderIdentity": "primary/alpha-pod", "leaseDurationSeconds": 300}}
    assert forbidden(lambda: theirs.replace(held, 5))
    assert forbidden(lambda: alpha.delete(LEASES_RESOURCE, NAMESPACE, lease_name("beta")))
    report = HealthConfigMap(alpha, NAMESPACE, "beta", "primary")
    try:
        assert forbidden(lambda: report.write({"stopped": {"reason": "Forged"}}))
    finally:
        report.stop()
    assert (view.kube.get(LEASES, "Lease", lease_name("beta"), NAMESPACE) or {})["spec"] == lease["spec"]
    assert not (view.kube.get("v1", "ConfigMap", "beta-jms-bridge-health", NAMESPACE) or {}).get("data")

    # What the API server says, verb by verb.
    for verb in ("get", "update", "patch", "delete"):
        assert not allowed(view.kube, "alpha-job", verb, "leases", lease_name("beta"), "coordination.k8s.io")
    assert not allowed(view.kube, "alpha-job", "create", "leases", "", "coordination.k8s.io")
    for verb in ("get", "update", "patch"):
        assert not allowed(view.kube, "alpha-job", verb, "configmaps", "beta-jms-bridge-health")
        assert allowed(view.kube, "alpha-job", verb, "configmaps", "alpha-jms-bridge-health")
    assert allowed(view.kube, "alpha-job", "update", "leases", lease_name("alpha"), "coordination.k8s.io")
    assert not allowed(view.kube, "alpha-job", "get", "secrets", "beta-key")
    assert not allowed(view.kube, "alpha-job", "get", "secrets", "alpha-key")  # the kubelet reads it


def test_deleting_the_key_secret_rotates_the_key_and_rolls_the_bridge(view: View) -> None:
    """docs/security.md (Rotation): the operator makes a new key, and the applications restart with it."""
    body = simple_bridge("gamma")
    body["spec"]["bridgeId"] = "gamma"
    view.create(body, route("out", "gamma"))
    old = identity_of(view, "gamma", standby=False)[("Secret", "gamma-key")]
    first = view.wait(lambda: view.apps().get("gamma-primary"), "the application")
    version = first["spec"]["driver"]["annotations"][naming.ANNOTATION_SECRETS_VERSION]
    view.kube.delete("v1", "Secret", "gamma-key", NAMESPACE)

    def renewed() -> dict[str, Any] | None:
        secret = view.kube.get("v1", "Secret", "gamma-key", NAMESPACE)
        return secret if secret and secret["metadata"]["uid"] != old["metadata"]["uid"] else None

    new = view.wait(renewed, "a new key Secret")
    assert new["data"]["key"] != old["data"]["key"]

    def rolled() -> bool:
        app = view.apps().get("gamma-primary") or {}
        annotations = (app.get("spec") or {}).get("driver", {}).get("annotations") or {}
        return annotations.get(naming.ANNOTATION_SECRETS_VERSION) not in (None, version)

    view.wait(rolled, "the application restarted with the new key")
