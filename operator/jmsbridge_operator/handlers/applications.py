"""A SparkApplication of ours changed: the state the spark-operator reports flows into the bridge's status.

We watch with `kopf.on.event` (no finalizers, no annotations of kopf's on the spark-operator's objects)
and react only to what matters: a new `applicationState.state`, a new `metadata.generation` (someone
changed the spec: the reconciliation puts back what was edited by hand, `drift.py`), our labels changed
(the operator lists its applications by label: it adopts the application again), or the application
being gone (then it is created again, unless the bridge is suspended, held, or being deleted). The objects
listed at start-up are only remembered: the bridges' own resumption looks at them anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jmsbridge_operator import naming
from jmsbridge_operator.reconciler import APPLICATIONS, Reconciler, RoutesLookup


def state_of(body: Mapping[str, Any]) -> str:
    return str(((body.get("status") or {}).get("applicationState") or {}).get("state") or "")


def owner_of(body: Mapping[str, Any]) -> str | None:
    metadata = body.get("metadata") or {}
    annotated = (metadata.get("annotations") or {}).get(naming.ANNOTATION_BRIDGE)
    if annotated:
        return str(annotated)
    for owner in metadata.get("ownerReferences") or []:
        if owner.get("kind") == "JmsBridge":
            return str(owner.get("name"))
    return None


def event(
    reconciler: Reconciler,
    type: str | None,
    namespace: str,
    body: Mapping[str, Any],
    memo: Any,
    routes: RoutesLookup,
) -> None:
    if type == "DELETED":
        reconciler.watched.seen(APPLICATIONS, type, namespace, body)  # the rest comes by `applications_seen`
    metadata = body.get("metadata") or {}
    key = (namespace, str(metadata.get("name")))
    labels = metadata.get("labels") or {}
    now = (state_of(body), metadata.get("generation"), labels.get(naming.LABEL_BRIDGE))
    seen: dict[tuple[str, str], tuple[str, Any, Any]] = memo.setdefault("applications_seen", {})
    before = seen.pop(key, None) if type == "DELETED" else seen.get(key)
    if type != "DELETED":
        seen[key] = now
    if type is None or (type == "ADDED" and not now[0]):  # the initial listing; our own creation
        return
    if type != "DELETED" and now == before:
        return
    bridge = owner_of(body)
    if bridge:
        reconciler.reconcile(namespace, bridge, routes)
