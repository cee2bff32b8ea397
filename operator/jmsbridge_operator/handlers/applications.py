"""A SparkApplication of ours changed: the state the spark-operator reports flows into the bridge's status.

We watch with `kopf.on.event` (no finalizers, no annotations on the spark-operator's objects) and react
only to what matters: a new `applicationState.state`, or the application being gone (then it is created
again, unless the bridge is suspended, held, or being deleted). The objects listed at start-up are only
remembered: the bridges' own resumption looks at them anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jmsbridge_operator import naming
from jmsbridge_operator.handlers.reconciling import Reconciler, RoutesLookup


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
    state = state_of(body)
    seen = getattr(memo, "application_state", None)
    memo.application_state = state
    if type is None:  # the initial listing
        return
    if type != "DELETED" and state == (seen or ""):
        return
    bridge = owner_of(body)
    if bridge:
        reconciler.reconcile(namespace, bridge, routes)
