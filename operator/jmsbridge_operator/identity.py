"""Identity: who a bridge's pods are to Kubernetes, and the key only they hold.

Each bridge gets its own ServiceAccount, so that what one bridge's pods may do is no other bridge's:

- a Role with the rules whose object names are known, each narrowed with `resourceNames`: the bridge's
  Lease (`<bridgeId>-jms-bridge`, the active/standby election: get and update, as
  `bridge_job/kube/leadership.py` reads and replaces it) and its health ConfigMap
  (`<bridgeId>-jms-bridge-health`: get, update and patch, as `bridge_job/kube/health.py` writes it);
- a RoleBinding to that Role, and one to the chart's ClusterRole `naming.JOB_CLUSTER_ROLE`: what Spark's
  driver needs for the objects whose names it makes up (executor pods, their ConfigMap, claims), which no
  `resourceNames` can narrow;
- with a standby, the Lease itself, free (no holder): `create` cannot be narrowed by name, so the operator
  creates it and the job only takes it;
- a Secret with the bridge's key (bridge_job/signing.py), 32 random bytes made once by the operator
  (`with_key`) and never overwritten; deleting it rotates the key (docs/security.md).

Everything is owned by the bridge (deleting the bridge deletes it) and labelled as its other children.
A bridge whose `spark.serviceAccount` names an account of the platform team's allow-list (policy.py) runs
as that one; its own is made all the same and stays unused. Pure: the reconciler creates these objects
(provisioning.py), and replaces the account, Role and bindings when they differ (`differs`).
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Any, Final

from bridge_job.config import JmsBridge, JobConfig, health_config_map_name, lease_name
from bridge_job.contract import LABEL_BRIDGE_ID
from jmsbridge_operator import naming
from jmsbridge_operator.render import owner_reference

COMPONENT_IDENTITY: Final = "identity"
RBAC_API_VERSION: Final = "rbac.authorization.k8s.io/v1"


@dataclasses.dataclass(frozen=True)
class Identity:
    """The objects a bridge's pods need before they start."""

    objects: tuple[dict[str, Any], ...]  # ServiceAccount, Role, RoleBindings: created, else replaced
    lease: dict[str, Any] | None  # created when absent, never replaced (the job writes it)
    key_secret: dict[str, Any]  # created when absent, with `with_key`; never replaced

    @property
    def service_account(self) -> str:
        return str(self.objects[0]["metadata"]["name"])


def _metadata(bridge: JmsBridge, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "labels": labels or naming.child_labels(bridge.metadata.name, COMPONENT_IDENTITY),
        "annotations": {naming.ANNOTATION_BRIDGE: bridge.metadata.name},
    }
    if bridge.metadata.namespace:
        metadata["namespace"] = bridge.metadata.namespace
    if (owner := owner_reference(bridge)) is not None:
        metadata["ownerReferences"] = [owner]
    return metadata


def role_rules(config: JobConfig) -> list[dict[str, Any]]:
    """What the job does with the objects whose names it knows, on those names only."""
    return [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [lease_name(config.bridge_id)],
            "verbs": ["get", "watch", "update"],  # watch: a standby sees each renewal as it is made
        },
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [health_config_map_name(config.bridge_id)],
            "verbs": ["get", "update", "patch"],
        },
    ]


def _binding(bridge: JmsBridge, name: str, kind: str, role: str, account: str) -> dict[str, Any]:
    subject = {"kind": "ServiceAccount", "name": account}
    if bridge.metadata.namespace:
        subject["namespace"] = bridge.metadata.namespace
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "RoleBinding",
        "metadata": _metadata(bridge, name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": [subject],
    }


def free_lease(bridge: JmsBridge, config: JobConfig) -> dict[str, Any]:
    """The bridge's Lease with no holder, labelled as the job labels it (the operator watches those)."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": _metadata(bridge, lease_name(config.bridge_id), {LABEL_BRIDGE_ID: config.bridge_id}),
        "spec": {},
    }


def key_secret(bridge: JmsBridge) -> dict[str, Any]:
    """The bridge's key Secret, without its key (`with_key` adds one)."""
    name = naming.bridge_key_secret(bridge.metadata.name)
    return {"apiVersion": "v1", "kind": "Secret", "metadata": _metadata(bridge, name), "type": "Opaque"}


def with_key(secret: dict[str, Any], key: bytes) -> dict[str, Any]:
    """`secret` holding `key` as URL-safe base64 text (what bridge_job/signing.py reads from the env)."""
    text = base64.urlsafe_b64encode(key).rstrip(b"=")
    return {**secret, "data": {naming.BRIDGE_KEY_SECRET_KEY: base64.b64encode(text).decode()}}


def identity(bridge: JmsBridge, config: JobConfig) -> Identity:
    """What the bridge's pods are, and may do, in its namespace."""
    name = bridge.metadata.name
    account = naming.job_service_account(name)
    objects = (
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _metadata(bridge, account)},
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "Role",
            "metadata": _metadata(bridge, account),
            "rules": role_rules(config),
        },
        _binding(bridge, account, "Role", account, account),
        _binding(bridge, naming.spark_role_binding(name), "ClusterRole", naming.JOB_CLUSTER_ROLE, account),
    )
    lease = free_lease(bridge, config) if config.bridge.failover.standby else None
    return Identity(objects, lease, key_secret(bridge))


def differs(existing: dict[str, Any], desired: dict[str, Any]) -> bool:
    """Whether what we set of an object (rules, subjects, owner, our labels) is not what it has."""
    fields = ("rules", "roleRef", "subjects")
    if any(existing.get(field) != desired.get(field) for field in fields):
        return True
    owners = desired["metadata"].get("ownerReferences")
    if owners and (existing.get("metadata") or {}).get("ownerReferences") != owners:
        return True
    labels = (existing.get("metadata") or {}).get("labels") or {}
    return any(labels.get(k) != v for k, v in desired["metadata"].get("labels", {}).items())
