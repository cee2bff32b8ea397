"""A ConfigMap of ours was deleted or edited by hand: its bridge is reconciled at once, which puts it back.

The reconciliation would find it at the next resync too (`JMSBRIDGE_RESYNC_SECONDS`); watching our
ConfigMaps (by label: ours, component `config`) makes it seconds. Our own writes carry the hash of their
data (`jmsbridge.dev/config-hash`), so a write of ours triggers nothing; an edit that leaves data and
hash disagreeing, or a deletion, does.

The watch is registered here, not in `main.py` with the others, only because `main.py` is being changed
in parallel work; it belongs there, next to the SparkApplication watch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import kopf

from bridge_job.contract.clients import CONFIG_MAPS
from jmsbridge_operator import naming
from jmsbridge_operator.reconciler import Reconciler, RoutesLookup
from jmsbridge_operator.render import COMPONENT_CONFIG, config_hash_of, digest

LABELS = {naming.LABEL_MANAGED_BY: naming.MANAGER, naming.LABEL_COMPONENT: COMPONENT_CONFIG}


def edited_or_gone(type: str | None, body: Mapping[str, Any]) -> bool:
    """Whether an event of one of our ConfigMaps means someone else changed it."""
    if type == "DELETED":
        return True
    return type == "MODIFIED" and config_hash_of(dict(body)) != digest(dict(body.get("data") or {}))


def bridge_of(body: Mapping[str, Any]) -> str | None:
    metadata = body.get("metadata") or {}
    named = (metadata.get("annotations") or {}).get(naming.ANNOTATION_BRIDGE)
    return str(named) if named else None


def event(
    reconciler: Reconciler, type: str | None, namespace: str, body: Mapping[str, Any], routes: RoutesLookup
) -> None:
    if type == "DELETED":
        reconciler.watched.seen(CONFIG_MAPS, type, namespace, body)  # the rest comes by `config_maps_seen`
    bridge = bridge_of(body)
    if bridge and edited_or_gone(type, body):
        reconciler.reconcile(namespace, bridge, routes)


@kopf.on.event("v1", "configmaps", labels=LABELS)
def config_map_event(
    type: str | None, namespace: str | None, body: kopf.Body, memo: Any, **kwargs: Any
) -> None:
    index: kopf.Index[tuple[str, str], Mapping[str, Any]] = kwargs["routes_by_bridge"]

    def routes(namespace: str, bridge: str) -> Sequence[Mapping[str, Any]]:
        return list(index.get((namespace, bridge), []))

    event(memo.reconciler, type, namespace or "", body, routes)
