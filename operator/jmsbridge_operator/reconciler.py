"""The reconciler: observe a bridge, plan (pure), write what changed, post Events.

Every trigger (the bridge changed, a route changed, a SparkApplication changed state, the resync timer)
ends here, and a reconciliation always starts from the latest look at the cluster (below), so it does not
matter which trigger came first or how many came at once (level-triggered). Triggers for one bridge are
coalesced: while a reconciliation of a bridge runs, further requests for it only mark it dirty, and the
running one goes round once more when it is done. So 3 routes created in a burst cost 1 or 2
reconciliations, not 3 racing ones.

Reads per reconciliation: none, as a rule. The bridge, its ConfigMap, its SparkApplications (by label),
and with a standby its Lease and checkpoint claim, and the job's health ConfigMap, come from what the
watches last saw or what this reconciler last wrote (`watched.py`); the routes from kopf's in-memory index
of `JmsBridgeRoute`. The periodic resync (`fresh`) reads them from the API server instead. Writes happen
only when the plan says an object changes.

A child not ours by label whose name is taken (a create answered 409) is read by name and remembered,
with backoff (`taken_names.py`), so that planning adopts it or says `NameConflict`.

A bridge's identity (its service account, Role, bindings, Lease, key Secret: identity.py) is made before
its applications are written, once per bridge and operator process (`provisioning.py`): a create each,
then nothing while what the plan renders for it stays the same.

A standby pair's status also changes with time alone (a Lease not renewed expires; nobody holding it for
its duration is `NoActiveInstance`): the plan says when (`recheck_at`), and `reconcile_if_due`, called by
each bridge's quiet loop (`handlers/rechecks.py`), reconciles the bridge then.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import kopf

from bridge_job.config import DEFAULT_JOB_IMAGE, health_config_map_name
from bridge_job.contract import LABEL_BRIDGE_ID
from bridge_job.contract.clients import CONFIG_MAPS, LEASES, ApiError, Kube, Resource
from jmsbridge_operator import metrics, naming
from jmsbridge_operator.acceptance import judge_routes, route_name
from jmsbridge_operator.bridge_ids import BridgeIds, effective_id
from jmsbridge_operator.condition_catalogue import ACCEPTED, NAME_CONFLICT, READY
from jmsbridge_operator.conditions import Transition
from jmsbridge_operator.drift import stored_spec_hash
from jmsbridge_operator.kafka_checks.gate import Gate, open_gate
from jmsbridge_operator.lease_status import observed_lease
from jmsbridge_operator.planning import Observed, Plan, Write, plan
from jmsbridge_operator.policy import DEFAULT_POLICY, Policy
from jmsbridge_operator.provisioning import NotOurs, Provisioning
from jmsbridge_operator.secret_versions import ABSENT, SecretVersions
from jmsbridge_operator.status import ApplicationState, find_condition, route_status, status_patch
from jmsbridge_operator.taken_names import Backoff, TakenNames
from jmsbridge_operator.timing import DEFAULT_TIMING, Timing
from jmsbridge_operator.watched import Watched

logger = logging.getLogger("jmsbridge_operator")

BRIDGES = Resource(*naming.BRIDGE_RESOURCE)
ROUTES = Resource(*naming.ROUTE_RESOURCE)
APPLICATIONS = Resource(naming.SPARK_GROUP, naming.SPARK_VERSION, naming.SPARK_PLURAL)
CLAIMS = Resource("", "v1", "persistentvolumeclaims")

RoutesLookup = Callable[[str, str], Sequence[Mapping[str, Any]]]


class EventSink(Protocol):
    def __call__(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None: ...


def post_event(obj: Mapping[str, Any], type: str, reason: str, message: str) -> None:
    """A Kubernetes Event on `obj`, posted by kopf in the background."""
    raw: Any = dict(obj)
    kopf.event(kopf.Body(raw), type=type, reason=reason, message=message)


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _moment() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def resource_of(kind: str) -> Resource:
    return {"ConfigMap": CONFIG_MAPS, naming.SPARK_KIND: APPLICATIONS}[kind]


@dataclasses.dataclass
class _Slot:
    pending: bool = False
    fresh: bool = False


def made_by_a_job(obj: Mapping[str, Any]) -> bool:
    """Whether the jobs labelled an object they made: the operator's watches select those only."""
    return LABEL_BRIDGE_ID in ((obj.get("metadata") or {}).get("labels") or {})


def noted(application: Mapping[str, Any]) -> dict[str, Any]:
    """A SparkApplication to write, noting its spec as stored (`drift.py`): right as long as the API
    server stores the spec as sent, and written again after the write only when it did not."""
    metadata = dict(application.get("metadata") or {})
    annotations = {
        **(metadata.get("annotations") or {}),
        naming.ANNOTATION_STORED_SPEC_HASH: stored_spec_hash(application),
    }
    return {**application, "metadata": {**metadata, "annotations": annotations}}


class _NameTaken(Exception):
    """A create failed because an object not listed as ours already has the name (`taken_names`)."""

    def __init__(self, kind: str, name: str) -> None:
        super().__init__(name)
        self.kind = kind
        self.name = name

    @property
    def resource(self) -> Resource:
        return resource_of(self.kind)


def labelled_as(child: Mapping[str, Any], bridge: str) -> bool:
    """Whether a child carries the labels `naming.bridge_selector(bridge)` selects."""
    labels = (child.get("metadata") or {}).get("labels") or {}
    return bool(
        labels.get(naming.LABEL_MANAGED_BY) == naming.MANAGER
        and labels.get(naming.LABEL_BRIDGE) == naming.label_value(bridge)
    )


class Reconciler:
    def __init__(
        self,
        kube: Kube,
        *,
        gate: Gate = open_gate,
        events: EventSink = post_event,
        clock: Callable[[], str] = utc_now,
        backoff: Backoff | None = None,
        timing: Timing | None = None,
        job_image: str = DEFAULT_JOB_IMAGE,
        policy: Policy = DEFAULT_POLICY,
        secrets_max_age: float | None = None,
    ) -> None:
        self.kube = kube
        # The versions of the Secrets the bridges' pods read (None: not followed; secret_versions.py).
        self.secrets = SecretVersions(kube, secrets_max_age) if secrets_max_age else None
        self.gate = gate
        self.events = events
        self.clock = clock
        self._guard = threading.Lock()
        self._running: dict[tuple[str, str], _Slot] = {}
        self._written_route_status: dict[tuple[str, str], dict[str, Any]] = {}
        self._recheck: dict[tuple[str, str], datetime.datetime] = {}
        # asked for by `reconcile_soon`: when, and when first asked
        self._soon: dict[tuple[str, str], tuple[datetime.datetime, datetime.datetime]] = {}
        self.taken = TakenNames(backoff or Backoff())  # SparkApplications
        self.taken_config = TakenNames(backoff or Backoff())  # ConfigMaps
        self.timing = timing or DEFAULT_TIMING
        self.job_image = job_image
        self.policy = policy
        self.bridge_ids = BridgeIds()  # every served bridge's id (bridge_ids.py), fed by their index
        self.watched = Watched(kube.get)  # the bridges, their children, Leases, health reports, claims
        # Each bridge's service account, Role, bindings, Lease and key (identity.py), as last made.
        self.provisioning = Provisioning(kube)
        # The Secrets each bridge's pods read, and when their versions are due to be read again.
        self._secret_looks: dict[tuple[str, str], tuple[tuple[str, ...], datetime.datetime | None]] = {}
        # Set when the operator stops (its cleanup): the rechecks loops end, those kopf starts late too.
        self.stopping = threading.Event()

    # -----------------------------------------------------------------------------------------------
    # Triggers

    def reconcile(self, namespace: str, name: str, routes: RoutesLookup, *, fresh: bool = False) -> None:
        """Reconcile a bridge now, or, when that is already under way, once more right after it. `fresh`:
        read the bridge and its children from the API server, not from the watches (`watched.py`)."""
        key = (namespace, name)
        with self._guard:
            if key in self._running:
                self._running[key].pending = True
                self._running[key].fresh |= fresh
                return
            slot = self._running[key] = _Slot(fresh=fresh)
        try:
            while True:
                with self._guard:
                    self._soon.pop(key, None)  # this round covers what was asked for until now
                    fresh, slot.fresh = slot.fresh, False
                with metrics.measured("bridge"):
                    self._reconcile_once(namespace, name, routes, fresh)
                with self._guard:
                    if not slot.pending:
                        del self._running[key]
                        return
                    slot.pending = False
        except BaseException as error:
            with self._guard:
                self._running.pop(key, None)
            if isinstance(error, Exception):  # the recheck loop tries again: a trigger of kopf's
                self._recheck[key] = _moment()  # `on.event` (routes, applications) is not retried
            raise

    def reconcile_orphans(self, namespace: str, name: str, routes: RoutesLookup) -> None:
        """Routes of a bridge the operator has not seen: they say `BridgeNotFound`, unless it exists (just
        created, its event not handled yet: its own creation reconciles it with its routes)."""
        bridge = self.watched.get(BRIDGES, namespace, name)
        if bridge is None or (bridge.get("metadata") or {}).get("deletionTimestamp"):
            self.reconcile(namespace, name, routes)

    def id_freed(self, gone: Mapping[str, Any]) -> None:
        """A bridge went: the bridges refused for holding its id are reconciled again (one may run now)."""
        for namespace, name in self.bridge_ids.gone(gone):
            self.reconcile_soon(namespace, name, delay=0)

    def reconcile_soon(self, namespace: str, name: str, delay: float | None = None) -> None:
        """Reconcile a bridge `delay` seconds (the timing's settle time) after the last such request (its
        recheck loop does), at most the timing's gather time after the first: the routes of a `kubectl
        apply` arrive one by one (behind their bridge, when the operator is busy), and one reconciliation
        then writes the ConfigMap and the statuses once instead of once per route."""
        delay = self.timing.settle_seconds if delay is None else delay
        now = _moment()
        with self._guard:
            due, first = self._soon.get((namespace, name), (now, now))
            latest = first + datetime.timedelta(seconds=max(delay, self.timing.gather_seconds))
            due = max(due, min(now + datetime.timedelta(seconds=delay), latest))  # never sooner
            self._soon[(namespace, name)] = (due, first)

    def is_due(self, namespace: str, name: str, *, secrets: bool = True) -> bool:
        """Whether a bridge is due (its status changes with time, it was asked for `soon`, or, with
        `secrets`, the versions of its Secrets are to be read again)."""
        key = (namespace, name)
        soon = self._soon.get(key)
        look = self._secret_looks.get(key, ((), None))[1] if secrets else None
        moments = (self._recheck.get(key), soon[0] if soon else None, look)
        due = [moment for moment in moments if moment is not None]
        return bool(due) and _moment() >= min(due)

    def reconcile_if_due(self, namespace: str, name: str, routes: RoutesLookup) -> None:
        """Reconcile a bridge whose status was due to change with time. When only its Secrets were due,
        they are read, and the bridge is reconciled only if one changed (at rest: a GET per Secret)."""
        if not self.is_due(namespace, name):
            return
        key = (namespace, name)
        if self.secrets is not None and not self.is_due(namespace, name, secrets=False):
            names, _ = self._secret_looks.get(key, ((), None))
            if not self.secrets.refresh(namespace, self.secrets.stale(namespace, names)):
                self._secret_looks[key] = (names, self.secrets.next_look(namespace, names))
                return
        self.reconcile(namespace, name, routes)

    # -----------------------------------------------------------------------------------------------

    def _reconcile_once(self, namespace: str, name: str, routes: RoutesLookup, fresh: bool = False) -> None:
        key = (namespace, name)
        route_bodies = [self._freshest(namespace, body) for body in routes(namespace, name)]
        bridge = self.watched.get(BRIDGES, namespace, name, fresh=fresh)
        if bridge is None or (bridge.get("metadata") or {}).get("deletionTimestamp"):
            self.taken.forget_bridge(key)
            self.taken_config.forget_bridge(key)
            self._secret_looks.pop(key, None)
            self.provisioning.forget(key)
            metrics.bridge_ready(namespace, name, None)
            self.publish_orphans(namespace, name, route_bodies)
            return
        now = _moment()
        config_map_name = naming.config_map_name(name)
        config_map = self.watched.get(CONFIG_MAPS, namespace, config_map_name, fresh=fresh)
        listed = [config_map_name] if config_map is not None else []
        held = self.taken_config.observed(key, listed, self._named(CONFIG_MAPS, namespace), now)
        config_map = config_map or next(iter(held), None)
        labelled = self._applications(namespace, name, fresh)
        names = {str(app["metadata"]["name"]) for app in labelled}
        taken = self.taken.observed(key, names, self._named(APPLICATIONS, namespace), now)
        applications: list[Mapping[str, Any]] = [*labelled, *taken]
        lease = claim = None
        if (elected := observed_lease(bridge, None)) is not None:
            lease = self.watched.get(LEASES, namespace, elected.name, watched=made_by_a_job, fresh=fresh)
            claimed = (((bridge.get("spec") or {}).get("spark") or {}).get("checkpoint") or {}).get(
                "persistentVolumeClaim"
            )
            claim = self.watched.get(CLAIMS, namespace, str(claimed), fresh=fresh) if claimed else None
        health = None
        states = [ApplicationState.observe("", "", app) for app in applications]
        if any(state.running or state.failed for state in states):  # JMS state, or why a job stopped
            health_name = health_config_map_name(effective_id(bridge))
            health = self.watched.get(CONFIG_MAPS, namespace, health_name, watched=made_by_a_job, fresh=fresh)
        versions = self.secrets.known(namespace) if self.secrets is not None else None
        marks = self.secrets.marks(namespace) if self.secrets is not None else None
        first = self.bridge_ids.holder(bridge)
        observed = Observed(
            bridge, route_bodies, config_map, applications, lease, claim, health, versions, first, marks
        )
        decided = plan(observed, self.gate, self.clock(), self.timing, self.job_image, self.policy)
        if self.secrets is not None and (stale := self.secrets.stale(namespace, decided.secrets)):
            self.secrets.refresh(namespace, stale)  # a GET each, at most every max_age per Secret
            observed = dataclasses.replace(observed, secret_versions=self.secrets.known(namespace))
            decided = plan(observed, self.gate, self.clock(), self.timing, self.job_image, self.policy)
        decided = self._provide_identity(namespace, bridge, observed, decided)
        try:
            self._apply(namespace, bridge, decided)
        except _NameTaken as clash:
            holder = self._named(clash.resource, namespace)(clash.name)
            if holder is None:  # deleted meanwhile: the name is free
                raise kopf.TemporaryError(f"{clash.kind} {clash.name} changed meanwhile", delay=1) from None
            taken_names = self.taken_config if clash.kind == "ConfigMap" else self.taken
            taken_names.found(key, clash.name, holder, _moment())
            self._reconcile_once(namespace, name, routes)  # now with the holder observed: no create
            return
        looks = [self.taken.next_look(key), self.taken_config.next_look(key)]
        if self.secrets is not None:  # a rotation shows then (`reconcile_if_due`)
            self._secret_looks[key] = (decided.secrets, self.secrets.next_look(namespace, decided.secrets))
        due = [moment for moment in (decided.recheck_at, *looks) if moment is not None]
        if due:
            self._recheck[key] = min(due)
        else:
            self._recheck.pop(key, None)

    def _provide_identity(
        self, namespace: str, bridge: Mapping[str, Any], observed: Observed, decided: Plan
    ) -> Plan:
        """Make the bridge's identity before the applications that run as it (provisioning.py). A key
        Secret made now is read at once, so that the applications start with its version, and one made
        anew after a rotation rolls them."""
        if decided.identity is None:
            return decided
        key = (namespace, str(bridge["metadata"]["name"]))
        secret = str(decided.identity.key_secret["metadata"]["name"])
        absent = self.secrets is not None and self.secrets.known(namespace).get(secret) == ABSENT
        try:
            created = self.provisioning.ensure(namespace, key, decided.identity, absent)
        except NotOurs as error:
            self.events(bridge, "Warning", NAME_CONFLICT, str(error))
            raise kopf.TemporaryError(str(error), delay=60) from None
        if not (created and self.secrets is not None):
            return decided
        self.secrets.refresh(namespace, [secret])
        observed = dataclasses.replace(observed, secret_versions=self.secrets.known(namespace))
        return plan(observed, self.gate, self.clock(), self.timing, self.job_image, self.policy)

    def _applications(self, namespace: str, bridge: str, fresh: bool) -> list[Mapping[str, Any]]:
        """The bridge's SparkApplications, found by our labels (from the watch, or listed)."""
        if not fresh:
            found = self.watched.select(APPLICATIONS, namespace, lambda app: labelled_as(app, bridge))
            if found is not None:
                return found
        return list(self.kube.list(APPLICATIONS, namespace, naming.bridge_selector(bridge)))

    def _named(self, resource: Resource, namespace: str) -> Callable[[str], Mapping[str, Any] | None]:
        return lambda name: self.kube.get(resource, namespace, name)

    def _freshest(self, namespace: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """The route with the status we last wrote, when the index has not caught up with it yet."""
        written = self._written_route_status.get((namespace, route_name(body)))
        if written is None or body.get("status") == written:
            return body
        return {**body, "status": written}

    def _apply(self, namespace: str, bridge: Mapping[str, Any], decided: Plan) -> None:
        name = str(bridge["metadata"]["name"])
        for write in decided.writes:
            self._write(namespace, write)
            self.events(bridge, write.type, write.reason, write.message)
            if write.kind == "ConfigMap" and write.verb != "delete":  # what the spec waived is now stored
                for warning in decided.validation.warnings:
                    self.events(bridge, "Warning", warning.reason, warning.message)
        if decided.clear_annotations:  # before the status says Done: a failure here is retried whole
            removal = {"metadata": {"annotations": dict.fromkeys(decided.clear_annotations)}}
            self.watched.wrote(BRIDGES, namespace, self.kube.patch(BRIDGES, namespace, name, removal))
            metrics.WRITES.labels(naming.BRIDGE_PLURAL, "patch").inc()
        patch = status_patch(decided.previous_status, decided.status)
        if patch is not None:
            self.watched.wrote(BRIDGES, namespace, self.kube.patch_status(BRIDGES, namespace, name, patch))
            metrics.WRITES.labels(naming.BRIDGE_PLURAL, "status").inc()
        ready = find_condition(decided.status, READY) or {}
        metrics.bridge_ready(
            namespace, name, ready, str(decided.status.get("bridgeId") or effective_id(bridge))
        )
        if decided.failover is not None:
            self._announce(bridge, decided.failover)
        if decided.transition is not None:
            self._announce(bridge, decided.transition)
        for notice in decided.notices:
            self._announce(bridge, notice)
        for update in decided.routes:
            self._publish_route(
                namespace, update.name, update.status, update.previous, update.transition, update.body
            )

    def _write(self, namespace: str, write: Write) -> None:
        resource = resource_of(write.kind)
        logger.info("%s %s %s/%s", write.verb, write.kind, namespace, write.name)
        body = write.body
        if write.kind == naming.SPARK_KIND and write.verb != "delete":
            body = noted(body)
        try:
            if write.verb == "create":
                stored = self.kube.create(resource, namespace, body)
            elif write.verb == "replace":
                stored = self.kube.replace(resource, namespace, body)
            else:
                self.kube.delete(resource, namespace, write.name)
                stored = None
        except ApiError as error:
            if error.conflict and write.verb == "create":
                raise _NameTaken(write.kind, write.name) from None  # not ours by label, yet taken
            if error.conflict:
                # Someone (often our own earlier write, not yet seen) was faster: look again shortly.
                raise kopf.TemporaryError(f"{write.kind} {write.name} changed meanwhile", delay=1) from None
            raise
        metrics.WRITES.labels(write.kind, write.verb).inc()
        if stored is None:
            self.watched.deleted(resource, namespace, write.name)
        else:
            self.watched.wrote(resource, namespace, stored)
        if (
            stored is not None
            and write.kind == naming.SPARK_KIND
            and stored_spec_hash(stored) != stored_spec_hash(body)
        ):
            self._record_stored_spec(namespace, stored)  # the API server filled something in

    def _record_stored_spec(self, namespace: str, stored: Mapping[str, Any]) -> None:
        """Note the spec as the API server stored it, defaults included: a later difference is drift.

        An update of metadata only: the spark-operator restarts nothing for it. Should it fail (the
        object changed meanwhile), the next reconciliation finds a spec that differs from the note and
        writes it again, which changes nothing that runs.
        """
        body = {key: value for key, value in stored.items() if key != "status"}
        body["metadata"] = {k: v for k, v in (stored.get("metadata") or {}).items() if k != "managedFields"}
        annotations = dict(body["metadata"].get("annotations") or {})
        annotations[naming.ANNOTATION_STORED_SPEC_HASH] = stored_spec_hash(stored)
        body["metadata"]["annotations"] = annotations
        try:
            self.watched.wrote(APPLICATIONS, namespace, self.kube.replace(APPLICATIONS, namespace, body))
        except ApiError as error:
            if not (error.conflict or error.not_found):
                raise
            name = body["metadata"].get("name")
            logger.info("SparkApplication %s/%s changed before its spec was noted", namespace, name)

    def _announce(self, obj: Mapping[str, Any], transition: Transition) -> None:
        self.events(obj, transition.type, transition.reason, transition.message)

    def _publish_route(
        self,
        namespace: str,
        name: str,
        status: dict[str, Any],
        previous: Mapping[str, Any] | None,
        transition: Transition | None,
        body: Mapping[str, Any] | None = None,
    ) -> None:
        key = (namespace, name)
        if self._written_route_status.get(key) == status:
            return  # our last write; the index has not seen it yet
        patch = status_patch(previous, status)
        if patch is None:
            return
        try:
            self.kube.patch_status(ROUTES, namespace, name, patch)
        except ApiError as error:
            if error.not_found:
                return  # deleted meanwhile
            raise
        metrics.WRITES.labels(naming.ROUTE_PLURAL, "status").inc()
        self._written_route_status[key] = status
        if transition is not None:
            ref = body or {
                "apiVersion": naming.BRIDGE_API_VERSION,
                "kind": "JmsBridgeRoute",
                "metadata": {"name": name, "namespace": namespace},
            }
            self.events(ref, transition.type, transition.reason, transition.message)

    def bridge_deleted(self, body: Mapping[str, Any], routes: RoutesLookup) -> None:
        """Stop and remove the applications and the ConfigMap; the routes say their bridge is gone."""
        self.delete_children(body)
        namespace = str(body["metadata"].get("namespace") or "")
        name = str(body["metadata"]["name"])
        self.publish_orphans(namespace, name, list(routes(namespace, name)))

    def publish_orphans(
        self, namespace: str, bridge_name: str, route_bodies: Sequence[Mapping[str, Any]]
    ) -> None:
        """Routes whose bridge does not exist (any more) say so."""
        judgement = judge_routes(bridge_name, None, route_bodies, namespace=namespace)
        now = self.clock()
        for body in route_bodies:
            name = route_name(body)
            verdict = judgement.verdicts[name]
            previous = body.get("status")
            status = route_status(verdict, (body.get("metadata") or {}).get("generation"), previous, now)
            old = find_condition(previous, ACCEPTED)
            transition = None
            if old is None or old.get("reason") != verdict.reason:
                transition = Transition("Warning", verdict.reason, verdict.message)
            self._publish_route(namespace, name, status, previous, transition, body)

    def forget_route(self, namespace: str, name: str) -> None:
        self._written_route_status.pop((namespace, name), None)

    # -----------------------------------------------------------------------------------------------

    def delete_children(self, bridge: Mapping[str, Any]) -> None:
        """Remove what a deleted bridge created (the garbage collector would, later; we do it now)."""
        namespace = str(bridge["metadata"].get("namespace") or "")
        name = str(bridge["metadata"]["name"])
        metrics.bridge_ready(namespace, name, None)
        for app in self._applications(namespace, name, fresh=False):
            app_name = str(app["metadata"]["name"])
            if self.kube.delete(APPLICATIONS, namespace, app_name):
                metrics.WRITES.labels(naming.SPARK_KIND, "delete").inc()
                self.events(bridge, "Normal", "ApplicationDeleted", f"Deleted SparkApplication {app_name}")
            self.watched.deleted(APPLICATIONS, namespace, app_name)
        if self.kube.delete(CONFIG_MAPS, namespace, naming.config_map_name(name)):
            metrics.WRITES.labels("ConfigMap", "delete").inc()
        self.watched.deleted(CONFIG_MAPS, namespace, naming.config_map_name(name))
