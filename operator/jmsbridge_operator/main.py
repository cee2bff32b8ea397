"""Everything the operator reacts to, in one place. Each handler delegates to the reconciler or `handlers/`.

- JmsBridge: created -> reconcile within 2 s (with the routes applied with it); changed,
  resumed (operator restart) -> reconcile; deleted -> remove children (our finalizer
  `jmsbridge.dev/finalizer`); every `JMSBRIDGE_RESYNC_SECONDS` -> reconcile from the API server, not
  the watches (repairs drift, and whatever a watch missed);
  any event while it is annotated `jmsbridge.dev/reset-checkpoint` -> reconcile (checkpoint_reset.py).
- What a reconciliation reads: every event of bridges, our ConfigMaps and SparkApplications, the jobs'
  Leases and health reports, and claims, noted before any handler runs (`watched.py`).
- JmsBridgeRoute: indexed by bridge; created, its spec changed, gone -> reconcile its bridge(s) once no
  route came for half a second (2 s at most), gathering the routes of one apply (no kopf bookkeeping on
  routes: `on.event`); listed at start -> only routes whose bridge is missing need a look.
- SparkApplication (ours, by our annotation: labels can be removed by hand): a new state, our labels
  removed, or a deletion -> reconcile its bridge.
- Lease (a standby pair's `<bridgeId>-jms-bridge`, labelled with the bridge id by its jobs): a new holder
  or tenure, or a deletion -> reconcile its bridge.
- Time: one quiet loop per bridge reconciles it when its status is due to change with time alone (a
  tenure expired, nobody holding the Lease for its duration, a taken name due for another look:
  `handlers/rechecks.py`).
- PersistentVolumeClaim named as a standby pair's checkpoint claim: any event -> reconcile its bridge.
- The job's health ConfigMap (`<bridgeId>-jms-bridge-health`, labelled with the bridge id): a change ->
  reconcile its bridge (`JmsConnected`, `job_health.py`).
- Kafka checks: one daemon per JmsBridge checks its Kafka side before its applications are started or
  changed and every `JMSBRIDGE_KAFKA_CHECK_INTERVAL` while it lives, and reconciles it when the verdict
  changes (`kafka_checks/`; off with `JMSBRIDGE_KAFKA_CHECKS=false`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import kopf

from bridge_job.contract import LABEL_BRIDGE_ID
from bridge_job.contract.clients import CONFIG_MAPS, LEASES
from jmsbridge_operator import naming
from jmsbridge_operator.bridge_ids import effective_id
from jmsbridge_operator.handlers import applications, rechecks, routes, standby_pair, startup
from jmsbridge_operator.options import OperatorOptions
from jmsbridge_operator.reconciler import APPLICATIONS, BRIDGES, CLAIMS, RoutesLookup

OPTIONS = OperatorOptions.from_env()
BRIDGE = naming.BRIDGE_RESOURCE
ROUTE = naming.ROUTE_RESOURCE
APPLICATION = (naming.SPARK_GROUP, naming.SPARK_VERSION, naming.SPARK_PLURAL)
RETRY = OPTIONS.retry_seconds
# A check in flight when its bridge goes (or the operator stops) is cancelled; kopf waits this long.
CHECK_CANCELLATION = 5.0


def _routes(handler_kwargs: Mapping[str, Any]) -> RoutesLookup:
    """The routes of a bridge, from the `routes_by_bridge` index kopf hands to every handler."""
    index: kopf.Index[tuple[str, str], Mapping[str, Any]] = handler_kwargs["routes_by_bridge"]

    def find(namespace: str, bridge: str) -> Sequence[Mapping[str, Any]]:
        return list(index.get((namespace, bridge), []))

    return find


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    startup.configure(settings, memo, OperatorOptions.from_env())  # as the environment is now
    # The index functions below see each of these kinds whole before any handler runs.
    memo.reconciler.watched.listed(CONFIG_MAPS, APPLICATIONS, LEASES, CLAIMS)


@kopf.on.cleanup()
def clean_up(memo: kopf.Memo, **_: Any) -> None:
    startup.cleanup(memo)


@kopf.on.probe(id="bridges")
def bridges_known(**kwargs: Any) -> int:
    return len(kwargs["bridge_names"])


# ---------------------------------------------------------------------------------------------------
# Indexes (in memory, from the watch streams). All async: kopf runs a sync one in its thread pool, where it
# waits for a thread behind the handlers (reconciliations) of a busy operator: a new bridge's routes too.


@kopf.index(*ROUTE)
async def routes_by_bridge(body: kopf.Body, **_: Any) -> dict[tuple[str, str], dict[str, Any]]:
    return routes.index_entry(body)


# What a reconciliation reads (watched.py): kopf calls an index function for every event but a deletion,
# before any handler, and holds the handlers until each indexed kind's initial listing is in. These keep
# no kopf index (they return nothing); the deletions reach the cache through the watch handlers below.


@kopf.index(*BRIDGE)
async def bridges_seen(namespace: str | None, body: kopf.Body, memo: Any, **_: Any) -> None:
    memo.reconciler.watched.seen(BRIDGES, None, namespace or "", dict(body))
    memo.reconciler.bridge_ids.seen(body)


@kopf.index("", "v1", "configmaps")
async def config_maps_seen(namespace: str | None, body: kopf.Body, memo: Any, **_: Any) -> None:
    """Our ConfigMaps (annotated with their bridge) and the jobs' health reports (labelled with theirs)."""
    watched = memo.reconciler.watched
    if naming.ANNOTATION_BRIDGE in body.metadata.annotations or LABEL_BRIDGE_ID in body.metadata.labels:
        watched.seen(CONFIG_MAPS, None, namespace or "", dict(body))
    else:
        watched.unselected(CONFIG_MAPS, namespace or "", body)


@kopf.index(*APPLICATION)
async def applications_seen(namespace: str | None, body: kopf.Body, memo: Any, **_: Any) -> None:
    if naming.ANNOTATION_BRIDGE in body.metadata.annotations:
        memo.reconciler.watched.seen(APPLICATIONS, None, namespace or "", dict(body))
    else:
        memo.reconciler.watched.unselected(APPLICATIONS, namespace or "", body)


@kopf.index(*standby_pair.LEASES)  # those the jobs label: the API server selects them (startup.py)
async def leases_seen(namespace: str | None, body: kopf.Body, memo: Any, **_: Any) -> None:
    memo.reconciler.watched.seen(LEASES, None, namespace or "", dict(body))


@kopf.index(*standby_pair.CLAIMS)
async def claims_seen(namespace: str | None, body: kopf.Body, memo: Any, **_: Any) -> None:
    """Every claim, as little of it as the `CheckpointShared` condition reads: a bridge may name any."""
    memo.reconciler.watched.seen(CLAIMS, None, namespace or "", standby_pair.slim_claim(body))


@kopf.index(*BRIDGE)
async def bridge_names(namespace: str | None, name: str, **_: Any) -> dict[tuple[str, str], bool]:
    return {(namespace or "", name): True}


@kopf.index(*BRIDGE)
async def bridges_by_id(
    namespace: str | None, name: str, body: kopf.Body, **_: Any
) -> dict[tuple[str, str], str]:
    return {(namespace or "", effective_id(body)): name}


@kopf.index(*BRIDGE)
async def bridges_by_claim(
    namespace: str | None, name: str, spec: kopf.Spec, **_: Any
) -> dict[tuple[str, str], str]:
    return standby_pair.claim_key(namespace or "", name, spec)


# ---------------------------------------------------------------------------------------------------
# JmsBridge


@kopf.on.create(*BRIDGE, backoff=RETRY)
def bridge_created(namespace: str | None, name: str, memo: Any, **_: Any) -> None:
    # After the gather time (2 s; its rechecks loop): a `kubectl apply` of a bridge and its routes then
    # makes one reconciliation that writes the ConfigMap once, with every route, and no ConfigUpdated
    # after it, also when the operator is busy and the routes' events run behind the bridge's.
    reconciler = memo.reconciler
    reconciler.reconcile_soon(namespace or "", name, reconciler.timing.gather_seconds)


@kopf.on.resume(*BRIDGE, backoff=RETRY)
@kopf.on.update(*BRIDGE, backoff=RETRY)
def bridge_changed(namespace: str | None, name: str, memo: Any, **kwargs: Any) -> None:
    memo.reconciler.reconcile(namespace or "", name, _routes(kwargs))


@kopf.on.delete(*BRIDGE, backoff=RETRY)
def bridge_deleted(body: kopf.Body, memo: Any, **kwargs: Any) -> None:
    memo.reconciler.bridge_deleted(body, _routes(kwargs))


@kopf.timer(*BRIDGE, interval=OPTIONS.resync_seconds, initial_delay=OPTIONS.resync_seconds, backoff=RETRY)
def bridge_resync(namespace: str | None, name: str, memo: Any, **kwargs: Any) -> None:
    # From the API server, not the watches: whatever a watch could have missed is repaired too.
    memo.reconciler.reconcile(namespace or "", name, _routes(kwargs), fresh=True)


def _gone(type: str | None, **_: Any) -> bool:
    return type == "DELETED"


@kopf.on.event(*BRIDGE, when=_gone)
def bridge_gone(namespace: str | None, body: kopf.Body, memo: Any, **_: Any) -> None:
    memo.reconciler.watched.seen(BRIDGES, "DELETED", namespace or "", dict(body))
    memo.diffbase.forget(body)
    memo.reconciler.id_freed(dict(body))


@kopf.on.event(*BRIDGE, annotations={naming.ANNOTATION_RESET_CHECKPOINT: kopf.PRESENT})
def reset_requested(type: str | None, namespace: str | None, name: str, memo: Any, **kwargs: Any) -> None:
    """kopf's change detection leaves out the annotations under its storage prefix, which is ours: a
    checkpoint reset asked for with `jmsbridge.dev/reset-checkpoint` is seen here (until it is done)."""
    if type is not None:  # the initial listing: the bridges' own resumption reconciles them
        memo.reconciler.reconcile(namespace or "", name, _routes(kwargs))


# No cancellation timeout: a stop lets a reconciliation under way finish (the loop ends right after it).
# A forced cancel left kopf's shutdown with a TimeoutError and the operator with exit status 1.
@kopf.daemon(*BRIDGE)
async def bridge_rechecks(
    namespace: str | None, name: str, stopped: kopf.DaemonStopped, memo: Any, **kwargs: Any
) -> None:
    await rechecks.run(memo.reconciler, (namespace or "", name), _routes(kwargs), stopped)


def _checking_kafka(memo: Any, **_: Any) -> bool:
    return memo.kafka_checks is not None  # no daemons at all with the checks off


@kopf.daemon(*BRIDGE, when=_checking_kafka, cancellation_timeout=CHECK_CANCELLATION)
async def bridge_kafka_checks(
    namespace: str | None, name: str, body: kopf.Body, stopped: kopf.DaemonStopped, memo: Any, **kwargs: Any
) -> None:
    key = (namespace or "", name)
    await memo.kafka_checks.run(memo.reconciler, key, body, _routes(kwargs), stopped)


# ---------------------------------------------------------------------------------------------------
# JmsBridgeRoute


@kopf.on.event(*ROUTE)
def route_event(type: str | None, namespace: str | None, body: kopf.Body, memo: Any, **kwargs: Any) -> None:
    names = kwargs["bridge_names"]
    seen = memo.setdefault("routes_seen", {})

    def known(bridge: str) -> bool:
        return (namespace or "", bridge) in names

    routes.event(memo.reconciler, type, namespace or "", body, seen, _routes(kwargs), known)


# ---------------------------------------------------------------------------------------------------
# SparkApplication (the spark-operator's; ours by annotation)


@kopf.on.event(*APPLICATION, annotations={naming.ANNOTATION_BRIDGE: kopf.PRESENT})
def application_event(
    type: str | None, namespace: str | None, body: kopf.Body, memo: Any, **kwargs: Any
) -> None:
    applications.event(memo.reconciler, type, namespace or "", body, memo, _routes(kwargs))


# ---------------------------------------------------------------------------------------------------
# A standby pair's Lease (the jobs' election) and checkpoint claim


@kopf.on.event(*standby_pair.LEASES, labels={LABEL_BRIDGE_ID: kopf.PRESENT})
def lease_event(type: str | None, namespace: str | None, body: kopf.Body, memo: Any, **kwargs: Any) -> None:
    memo.reconciler.watched.seen(LEASES, type, namespace or "", body)
    key = standby_pair.lease_changed(type, namespace or "", body, memo)
    standby_pair.reconcile_indexed(memo.reconciler, key, kwargs["bridges_by_id"], _routes(kwargs))


@kopf.on.event("", "v1", "configmaps", labels={LABEL_BRIDGE_ID: kopf.PRESENT})
def health_event(type: str | None, namespace: str | None, body: kopf.Body, memo: Any, **kwargs: Any) -> None:
    memo.reconciler.watched.seen(CONFIG_MAPS, type, namespace or "", body)
    if type is None:
        return  # the initial listing: the bridges' own resumption reads them
    bridge_id = str(((body.get("metadata") or {}).get("labels") or {}).get(LABEL_BRIDGE_ID) or "")
    key = (namespace or "", bridge_id)
    standby_pair.reconcile_indexed(memo.reconciler, key, kwargs["bridges_by_id"], _routes(kwargs))


@kopf.on.event(*standby_pair.CLAIMS)
def claim_event(type: str | None, namespace: str | None, body: kopf.Body, memo: Any, **kwargs: Any) -> None:
    if type == "DELETED":
        memo.reconciler.watched.seen(CLAIMS, type, namespace or "", body)  # the rest: `claims_seen`
    key = standby_pair.claim_changed(type, namespace or "", body)
    standby_pair.reconcile_indexed(memo.reconciler, key, kwargs["bridges_by_claim"], _routes(kwargs))
