"""A JmsBridge was created, changed, resumed after an operator restart, or is being deleted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jmsbridge_operator.handlers.reconciling import Reconciler, RoutesLookup


def changed(reconciler: Reconciler, namespace: str, name: str, routes: RoutesLookup) -> None:
    reconciler.reconcile(namespace, name, routes)


def deleted(reconciler: Reconciler, body: Mapping[str, Any], routes: RoutesLookup) -> None:
    """Stop and remove the applications and the ConfigMap; the routes say their bridge is gone."""
    reconciler.delete_children(body)
    namespace = str(body["metadata"].get("namespace") or "")
    name = str(body["metadata"]["name"])
    reconciler.publish_orphans(namespace, name, list(routes(namespace, name)))
