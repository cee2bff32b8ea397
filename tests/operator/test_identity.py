"""A bridge's identity (jmsbridge_operator/identity.py), rendered: its own service account, a Role whose
every rule names its objects, the bindings, the free Lease and the key Secret (pure)."""

from __future__ import annotations

import base64
from typing import Any

from jmsbridge_operator import naming
from jmsbridge_operator.identity import Identity, differs, identity, with_key
from jmsbridge_operator.kafka_checks.gate import open_gate
from jmsbridge_operator.planning import Observed, plan

from bridge_job.config import JmsBridge, job_config
from bridge_job.kube.ownership import LABEL_BRIDGE_ID
from tests.operator.test_planning import NOW, cluster_bridge


def _identity(body: dict[str, Any]) -> Identity:
    model = JmsBridge.model_validate(body)
    return identity(model, job_config(model, []))


def test_every_rule_of_the_bridge_s_role_names_its_objects() -> None:
    made = _identity(cluster_bridge(bridgeId="pay"))
    account, role, own, spark = made.objects
    assert (account["kind"], account["metadata"]["name"]) == ("ServiceAccount", "simple-job")
    assert made.service_account == "simple-job"
    assert role["kind"] == "Role" and role["metadata"]["name"] == "simple-job"
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["pay-jms-bridge"],  # the bridge id's, not the name's
            "verbs": ["get", "watch", "update"],  # no create: the operator makes the Lease
        },
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["pay-jms-bridge-health"],
            "verbs": ["get", "update", "patch"],
        },
    ]
    subject = [{"kind": "ServiceAccount", "name": "simple-job", "namespace": "apps"}]
    assert own["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "simple-job"}
    assert spark["metadata"]["name"] == "simple-spark"
    assert spark["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": naming.JOB_CLUSTER_ROLE,
    }
    assert own["subjects"] == spark["subjects"] == subject
    for obj in (*made.objects, made.key_secret):
        meta = obj["metadata"]
        assert meta["namespace"] == "apps"
        assert meta["ownerReferences"][0]["uid"] == "uid-1"  # deleted with the bridge
        assert meta["labels"][naming.LABEL_BRIDGE] == "simple"
    assert made.lease is None  # no standby, no election


def test_a_standby_pair_gets_its_lease_free_and_labelled_as_the_job_labels_it() -> None:
    body = cluster_bridge(bridgeId="pay")
    body["spec"]["failover"] = {"standby": True}
    body["spec"]["spark"] = {"checkpoint": {"path": "/data/cp", "persistentVolumeClaim": "cp"}}
    lease = _identity(body).lease
    assert lease is not None
    assert lease["metadata"]["name"] == "pay-jms-bridge"
    assert lease["metadata"]["labels"] == {LABEL_BRIDGE_ID: "pay"}
    assert lease["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert lease["spec"] == {}  # no holder: the first instance to look takes it


def test_the_key_is_urlsafe_base64_of_32_bytes_in_a_secret_of_the_bridge() -> None:
    made = _identity(cluster_bridge())
    secret = with_key(made.key_secret, bytes(range(32)))
    assert secret["metadata"]["name"] == naming.bridge_key_secret("simple") == "simple-key"
    text = base64.b64decode(secret["data"]["key"])
    assert base64.urlsafe_b64decode(text + b"=") == bytes(range(32))
    assert "data" not in made.key_secret  # the key is the reconciler's to make, once


def test_what_differs_is_what_we_set() -> None:
    made = _identity(cluster_bridge())
    role = made.objects[1]
    stored = {**role, "metadata": {**role["metadata"], "resourceVersion": "7", "uid": "u"}}
    assert not differs(stored, role)
    assert differs({**stored, "rules": [*role["rules"], {"verbs": ["*"]}]}, role)


def test_the_plan_carries_the_identity_of_a_valid_bridge_only() -> None:
    decided = plan(Observed(cluster_bridge()), open_gate, NOW)
    assert decided.identity is not None and decided.identity.service_account == "simple-job"
    invalid = cluster_bridge(spark={"serviceAccount": "payments-admin"})
    assert plan(Observed(invalid), open_gate, NOW).identity is None


def test_an_unowned_object_labelled_as_the_bridge_s_is_adopted_another_s_is_not() -> None:
    from jmsbridge_operator.provisioning import owned_by

    made = _identity(cluster_bridge())
    account = made.objects[0]
    offline = {
        **account,
        "metadata": {k: v for k, v in account["metadata"].items() if k != "ownerReferences"},
    }
    assert owned_by(offline, account) and differs(offline, account)  # adopted: its owner written
    stranger = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "simple-job"}}
    assert not owned_by(stranger, account)
    former = {**account, "metadata": {**account["metadata"], "ownerReferences": [{"uid": "uid-0"}]}}
    assert not owned_by(former, account)  # a former bridge's of the same name: the collector's
