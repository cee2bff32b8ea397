"""A JmsBridgeRoute changed: its bridge (or bridges, when `bridgeRef` moved) is reconciled again.

Routes are indexed by `(namespace, bridgeRef.name)` in memory (a kopf index fed by the watch stream), so
that a bridge's reconciliation finds its routes without listing them. The index keeps a slim copy of each
route: what planning and the route's status need.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from jmsbridge_operator.acceptance import referenced_bridge
from jmsbridge_operator.reconciler import Reconciler, RoutesLookup

__all__ = ["changed", "gone", "index_entry", "referenced_bridge", "resumed"]


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


def changed(
    reconciler: Reconciler,
    namespace: str,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    routes: RoutesLookup,
) -> None:
    bridges = {referenced_bridge(new), referenced_bridge(old) if old else None} - {None}
    for bridge in sorted(b for b in bridges if b):
        reconciler.reconcile(namespace, bridge, routes)


def resumed(
    reconciler: Reconciler,
    namespace: str,
    body: Mapping[str, Any],
    routes: RoutesLookup,
    bridge_known: bool,
) -> None:
    """After an operator restart: a known bridge's own resumption covers its routes."""
    if not bridge_known:
        changed(reconciler, namespace, None, body, routes)


def gone(reconciler: Reconciler, namespace: str, body: Mapping[str, Any], routes: RoutesLookup) -> None:
    reconciler.forget_route(namespace, str((body.get("metadata") or {}).get("name")))
    bridge = referenced_bridge(body)
    if bridge:
        reconciler.reconcile(namespace, bridge, routes)
