"""A standby pair's Lease changed hands, or its checkpoint claim changed: its bridge is reconciled at once.

The Lease: the instances renew it every third of its duration; only a change of holder (or a new tenure:
`leaseTransitions`) or its deletion matters to the status, so renewals trigger nothing. The jobs label it
with the bridge id (`jmsbridge.dev/bridge-id`), and only Leases so labelled are watched (not every Lease
in the cluster: the nodes' and controllers' renew every few seconds); those not named
`<bridgeId>-jms-bridge` after a bridge the operator knows (`bridges_by_id`) are ignored. A tenure that
simply runs out makes no event at all: the reconciler's `recheck_at` and `rechecks.py` cover that.

The claim: any event of a claim a standby bridge names (`bridges_by_claim`) changes its `CheckpointShared`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from jmsbridge_operator.lease_status import LEASE_SUFFIX
from jmsbridge_operator.reconciler import Reconciler, RoutesLookup

LEASES = ("coordination.k8s.io", "v1", "leases")
CLAIMS = ("", "v1", "persistentvolumeclaims")

Key = tuple[str, str]


def claim_key(namespace: str, name: str, spec: Mapping[str, Any]) -> dict[Key, str]:
    """The `bridges_by_claim` entry of a bridge: a standby bridge under its checkpoint claim."""
    if not (spec.get("failover") or {}).get("standby"):
        return {}
    claim = ((spec.get("spark") or {}).get("checkpoint") or {}).get("persistentVolumeClaim")
    return {(namespace, str(claim)): name} if claim else {}


def lease_key(namespace: str, lease: str) -> Key | None:
    """The `bridges_by_id` key of a bridge's Lease; None for any other Lease."""
    if not lease.endswith(LEASE_SUFFIX) or lease == LEASE_SUFFIX:
        return None
    return (namespace, lease.removesuffix(LEASE_SUFFIX))


def _tenure(body: Mapping[str, Any]) -> tuple[str, int]:
    spec = body.get("spec") or {}
    return (str(spec.get("holderIdentity") or ""), int(spec.get("leaseTransitions") or 0))


def lease_changed(type: str | None, namespace: str, body: Mapping[str, Any], memo: Any) -> Key | None:
    """The bridge key of a Lease event that matters: a new holder or tenure, or the Lease deleted."""
    name = str((body.get("metadata") or {}).get("name") or "")
    key = lease_key(namespace, name)
    if key is None:
        return None
    seen: dict[Key, tuple[str, int]] = memo.setdefault("leases_seen", {})
    now = _tenure(body)
    before = seen.pop((namespace, name), None) if type == "DELETED" else seen.get((namespace, name))
    if type != "DELETED":
        seen[(namespace, name)] = now
    if type is None or (type != "DELETED" and now == before):
        return None  # the initial listing (the bridges' own resumption reads it), or a renewal
    return key


def slim_claim(body: Mapping[str, Any]) -> dict[str, Any]:
    """What the operator keeps of a claim: its identity and access modes (checkpoint_sharing.py)."""
    metadata = body.get("metadata") or {}
    spec, status = body.get("spec") or {}, body.get("status") or {}
    return {
        "metadata": {
            key: metadata[key] for key in ("name", "namespace", "uid", "resourceVersion") if key in metadata
        },
        "spec": {"accessModes": spec.get("accessModes") or []},
        "status": {"accessModes": status.get("accessModes") or [], "phase": status.get("phase")},
    }


def claim_changed(type: str | None, namespace: str, body: Mapping[str, Any]) -> Key | None:
    if type is None:
        return None  # the initial listing: the bridges' own resumption reads their claims
    return (namespace, str((body.get("metadata") or {}).get("name") or ""))


def reconcile_indexed(
    reconciler: Reconciler, key: Key | None, index: kopf.Index[Key, str], routes: RoutesLookup
) -> None:
    """Reconcile the bridges `index` files under `key`."""
    if key is None:
        return
    for bridge in index.get(key, []):
        reconciler.reconcile(key[0], bridge, routes)
