"""A JmsBridgeRoute changed: its bridge (or bridges, when `bridgeRef` moved) is reconciled again.

Routes are watched with `kopf.on.event`, as SparkApplications are: kopf keeps no bookkeeping on them (no
annotation written per route and change), and what changed is told by the route's generation and
`bridgeRef`, remembered per route (our own status writes change neither).

Routes are indexed by `(namespace, bridgeRef.name)` in memory (a kopf index fed by the watch stream), so
that a bridge's reconciliation finds its routes without listing them. The index keeps a slim copy of each
route: what planning and the route's status need.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from jmsbridge_operator.acceptance import referenced_bridge
from jmsbridge_operator.reconciler import Reconciler, RoutesLookup

__all__ = ["event", "index_entry", "referenced_bridge"]


def index_entry(body: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The route under its bridge's key (a route without a readable bridgeRef is not indexed)."""
    metadata = body.get("metadata") or {}
    bridge = referenced_bridge(body)
    if bridge is None:
        return {}
    slim = {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "metadata": {
            key: copy.deepcopy(metadata[key])
            for key in ("name", "namespace", "uid", "generation", "creationTimestamp")
            if key in metadata
        },
        "spec": copy.deepcopy(dict(body.get("spec") or {})),
        "status": copy.deepcopy(dict(body.get("status") or {})),
    }
    return {(str(metadata.get("namespace") or ""), bridge): slim}


Seen = dict[tuple[str, str], tuple[Any, str | None]]  # (namespace, route) -> (generation, bridgeRef)


def event(
    reconciler: Reconciler,
    type: str | None,
    namespace: str,
    body: Mapping[str, Any],
    seen: Seen,
    routes: RoutesLookup,
    known: Callable[[str], bool],
) -> None:
    """Reconcile the bridges a route event concerns: its bridge (and the one it left) when the route is
    new, changed its spec or went; at start-up (`type` None) only when its bridge is missing (a known
    bridge's own resumption covers its routes). A known bridge is reconciled soon, not at once, so that
    the routes of one `kubectl apply` make one reconciliation; a missing one at once (the routes say
    `BridgeNotFound`: no loop of the bridge's own runs to do it later)."""
    metadata = body.get("metadata") or {}
    key = (namespace, str(metadata.get("name")))
    now = (metadata.get("generation"), referenced_bridge(body))
    before = seen.pop(key, None) if type == "DELETED" else seen.get(key)
    if type == "DELETED":
        reconciler.forget_route(namespace, key[1])
    else:
        seen[key] = now
        if (type is None and now[1] is not None and known(now[1])) or now == before:
            return
    for bridge in sorted(b for b in {now[1], before[1] if before else None} if b):
        if known(bridge):
            reconciler.reconcile_soon(namespace, bridge)
        else:
            reconciler.reconcile_orphans(namespace, bridge, routes)
