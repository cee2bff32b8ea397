"""Planning: what one reconciliation of a bridge must do, decided from what was observed.

`plan()` takes the observed bridge, its routes and its children, and returns the writes to make (create,
replace, delete) and the statuses to publish, for the bridge and for each of its routes. It performs no
I/O; the reconciler (`reconciler.py`) observes, plans, writes and posts Events. This is where
the promises of the operator are kept:

- a child is written only when its rendered hash differs from the one it carries, so an operator restart
  or a repeated event writes nothing, and a route change rewrites the ConfigMap alone;
- a child someone else edited is put back (`drift.py`);
- a change of the bridge's spec reaches the standby first and the active instance only once the standby
  runs it (`rollout.py`), its config file included (`config_files.py`); so does a new version of a
  Secret its pods read (`secret_versions.py`), while an unknown version keeps what each one carries;
- `suspend` and a gate closed by a hard failure delete the applications (the ConfigMap stays, so resuming
  is quick); a gate closed by a transient failure changes no application until it opens or turns hard;
- an invalid spec changes nothing that runs and says what to fix;
- an object that has our name but is not ours is never taken over;
- a valid bridge's identity (its service account, Role, bindings, Lease and key Secret: identity.py) is
  in the plan for the reconciler to make before the applications that run as it.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from bridge_job.config import DEFAULT_JOB_IMAGE, JmsBridge, JobConfig, bridge_id_of
from jmsbridge_operator import naming, rollout
from jmsbridge_operator.acceptance import Judgement, Validation, route_name, validate
from jmsbridge_operator.checkpoint_reset import decide
from jmsbridge_operator.checkpoint_sharing import claim_condition, claimed
from jmsbridge_operator.condition_catalogue import ACCEPTED, INVALID_SPEC
from jmsbridge_operator.conditions import Condition, Problem, Transition, clip
from jmsbridge_operator.config_files import kept_files
from jmsbridge_operator.drift import application_drift, config_map_drift, listed, missing_labels
from jmsbridge_operator.identity import Identity, identity
from jmsbridge_operator.job_health import connection_reports, lost_reports, reset_reports, stop_reports
from jmsbridge_operator.kafka_checks.gate import OPEN, Gate, GateVerdict
from jmsbridge_operator.lease_status import FAILOVER, failover_message, observed_lease, parse_time, recheck_at
from jmsbridge_operator.policy import DEFAULT_POLICY, Policy
from jmsbridge_operator.render import (
    Rendered,
    config_hash_of,
    digest,
    instances,
    render,
    secret_names,
    secrets_version,
    secrets_version_of,
    spec_hash_of,
)
from jmsbridge_operator.spark_application import InvalidApplication
from jmsbridge_operator.status import (
    ApplicationState,
    BridgeOutcome,
    bridge_status,
    failure_recheck,
    find_condition,
    ready_transition,
    rollout_recheck,
    route_status,
)
from jmsbridge_operator.timing import DEFAULT_TIMING, Timing


@dataclasses.dataclass(frozen=True)
class Observed:
    """What the reconciler read: the bridge, the routes that reference it, and its children."""

    bridge: Mapping[str, Any]
    routes: Sequence[Mapping[str, Any]] = ()
    config_map: Mapping[str, Any] | None = None
    applications: Sequence[Mapping[str, Any]] = ()  # every SparkApplication labelled as this bridge's
    lease: Mapping[str, Any] | None = None  # with a standby: the bridge's Lease (None: absent)
    claim: Mapping[str, Any] | None = None  # with a standby: its checkpoint's PersistentVolumeClaim
    health: Mapping[str, Any] | None = None  # the ConfigMap where the job reports its JMS state
    # The versions of the Secrets the pods read, by name, as far as known (secret_versions.py); None:
    # the operator does not follow Secrets.
    secret_versions: Mapping[str, str] | None = None
    # `namespace/name` of an older bridge with this one's id (bridge_ids.py): this one is refused.
    id_holder: str | None = None
    # The bridges each Secret read so far is marked for (secret_marks.py); None: not read.
    secret_marks: Mapping[str, frozenset[str]] | None = None


DRIFT_REPAIRED = "DriftRepaired"


@dataclasses.dataclass(frozen=True)
class Write:
    verb: Literal["create", "replace", "delete"]
    body: dict[str, Any]
    reason: str  # one CamelCase word for the Event
    message: str

    @property
    def kind(self) -> str:
        return str(self.body.get("kind"))

    @property
    def type(self) -> Literal["Normal", "Warning"]:
        """Someone else changed what we own: worth a look (who edits our objects, and why)."""
        return "Warning" if self.reason == DRIFT_REPAIRED else "Normal"

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


@dataclasses.dataclass(frozen=True)
class RouteUpdate:
    name: str
    status: dict[str, Any]
    previous: Mapping[str, Any] | None
    transition: Transition | None
    body: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class Plan:
    writes: list[Write]
    status: dict[str, Any]
    previous_status: Mapping[str, Any] | None
    routes: list[RouteUpdate]
    validation: Validation  # the problems the statuses say, for `jmsbridge validate` to print
    gate: GateVerdict = OPEN
    transition: Transition | None = None
    failover: Transition | None = None  # the Lease changed hands
    notices: tuple[Transition, ...] = ()  # a checkpoint reset requested or done, records lost
    clear_annotations: tuple[str, ...] = ()  # on the bridge: requests taken and done
    recheck_at: datetime.datetime | None = None  # the status may change by then with nothing observed
    secrets: tuple[str, ...] = ()  # the Secrets the rendered pods read, whose versions the plan wants
    identity: Identity | None = None  # what the bridge's pods are (identity.py); None: invalid spec


def _meta(body: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (body or {}).get("metadata") or {}


def is_ours(child: Mapping[str, Any], bridge: Mapping[str, Any]) -> bool:
    """Whether a child was made by us for this bridge (ownerReference uid, else our labels)."""
    meta = _meta(child)
    uid = _meta(bridge).get("uid")
    owners = meta.get("ownerReferences") or []
    if uid and any(o.get("uid") == uid for o in owners):
        return True
    if owners:
        return False  # owned by something else, e.g. a former bridge of the same name
    labels = meta.get("labels") or {}
    name = str(_meta(bridge).get("name"))
    return bool(
        labels.get(naming.LABEL_MANAGED_BY) == naming.MANAGER
        and labels.get(naming.LABEL_BRIDGE) == naming.label_value(name)
    )


def of_a_former_bridge(obj: Mapping[str, Any] | None, bridge: Mapping[str, Any]) -> bool:
    """Whether an object the jobs create (Lease, health ConfigMap) belongs to another bridge of the same
    name, deleted since: the garbage collector will remove it; until then it says nothing of this one."""
    owners = [o for o in _meta(obj).get("ownerReferences") or [] if o.get("kind") == "JmsBridge"]
    uid = _meta(bridge).get("uid")
    return bool(owners and uid and all(o.get("uid") != uid for o in owners))


def replacement(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """`desired` on top of `existing`: our labels, annotations and owner set; other metadata kept."""
    old = _meta(existing)
    new = _meta(desired)
    metadata = {k: v for k, v in old.items() if k not in ("managedFields",)}
    metadata["labels"] = {**(old.get("labels") or {}), **(new.get("labels") or {})}
    metadata["annotations"] = {**(old.get("annotations") or {}), **(new.get("annotations") or {})}
    if "ownerReferences" in new:
        metadata["ownerReferences"] = new["ownerReferences"]
    body = {k: v for k, v in desired.items() if k not in ("metadata", "status")}
    body["metadata"] = metadata
    return body


def relabelled(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """`existing` as it is, with our labels put back (its spec and annotations untouched)."""
    body = {key: value for key, value in existing.items() if key != "status"}
    metadata = {key: value for key, value in _meta(existing).items() if key != "managedFields"}
    metadata["labels"] = {**(metadata.get("labels") or {}), **(_meta(desired).get("labels") or {})}
    body["metadata"] = metadata
    return body


def _label_repair(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> list[Write]:
    """Our labels removed by hand: without them our watches and listings miss the object."""
    if not (removed := missing_labels(existing, desired)):
        return []
    what = f"{existing.get('kind')} {_meta(existing).get('name')}"
    message = f"Restored the labels of {what}: {listed(removed)} removed by hand"
    return [Write("replace", relabelled(existing, desired), DRIFT_REPAIRED, message)]


def _route_updates(observed: Observed, judgement: Judgement, now: str) -> list[RouteUpdate]:
    updates = []
    for body in observed.routes:
        name = route_name(body)
        verdict = judgement.verdicts.get(name)
        if verdict is None:
            continue
        previous = body.get("status")
        status = route_status(verdict, _meta(body).get("generation"), previous, now)
        old = find_condition(previous, ACCEPTED)
        new = find_condition(status, ACCEPTED)
        transition = None
        # A route accepted at once posts no Event of its own: the bridge's ConfigCreated or ConfigUpdated
        # names it (one Event, not one per route). A refusal, and any later change, posts one.
        if new is not None and (
            (old is None and not verdict.accepted)
            or (old is not None and (old.get("status"), old.get("reason")) != (new["status"], new["reason"]))
        ):
            kind: Literal["Normal", "Warning"] = "Normal" if verdict.accepted else "Warning"
            transition = Transition(kind, verdict.reason, verdict.message)
        updates.append(RouteUpdate(name, status, previous, transition, body))
    return updates


def _instance_of(app: Mapping[str, Any]) -> str | None:
    """The instance (primary, secondary) an application of ours is, by its label."""
    instance = (_meta(app).get("labels") or {}).get(naming.LABEL_BRIDGE_INSTANCE)
    return str(instance) if instance else None


def _observed_states(observed: Observed, bridge_name: str) -> tuple[ApplicationState, ...]:
    states = []
    for app in sorted(observed.applications, key=lambda a: str(_meta(a).get("name"))):
        instance = _instance_of(app) or "?"
        states.append(ApplicationState.observe(instance, str(_meta(app).get("name")), app))
    return tuple(states)


def plan(
    observed: Observed,
    gate: Gate,
    now: str,
    timing: Timing = DEFAULT_TIMING,
    job_image: str = DEFAULT_JOB_IMAGE,
    policy: Policy = DEFAULT_POLICY,
) -> Plan:
    """Decide the writes and statuses for one bridge. `now` is the RFC 3339 time for new transitions;
    `job_image` runs bridges that name no image; `policy` is what the platform team lets bridges ask."""
    body = observed.bridge
    meta = _meta(body)
    name = str(meta.get("name"))
    namespace = meta.get("namespace")
    generation = meta.get("generation")
    previous = body.get("status")

    checked = validate(
        body,
        observed.routes,
        namespace=namespace,
        policy=policy,
        id_holder=observed.id_holder,
        secret_marks=observed.secret_marks,
    )
    judgement = checked.routes

    lease = observed_lease(body, None if of_a_former_bridge(observed.lease, body) else observed.lease)
    health = {} if of_a_former_bridge(observed.health, body) else (observed.health or {})
    reports = health.get("data")  # what the jobs say (job_health.py)
    checkpoint = decide(body, previous, reset_reports(reports), lost_reports(reports), now)

    def finish(outcome: BridgeOutcome, writes: list[Write], verdict: GateVerdict = OPEN) -> Plan:
        outcome = dataclasses.replace(
            outcome,
            lease=lease,
            timing=timing,
            checkpoint_reset=checkpoint.reset,
            records_lost=checkpoint.records_lost,
        )
        status = bridge_status(outcome, previous, now)
        failover = failover_message(previous or {}, status)
        moment = parse_time(now)
        due = [
            recheck_at(lease, status, moment) if lease is not None and moment else None,
            failure_recheck(status, timing.failure_window_seconds),
            rollout_recheck(outcome.rollout, timing.rollout_deadline_seconds),
        ]
        return Plan(
            secrets=names,
            identity=made,
            writes=writes,
            status=status,
            previous_status=previous,
            routes=_route_updates(observed, judgement, now),
            validation=checked,
            gate=verdict,
            transition=ready_transition(previous, status),
            failover=Transition("Warning", FAILOVER, failover) if failover else None,
            recheck_at=min((d for d in due if d is not None), default=None),
            notices=checkpoint.notices,
            clear_annotations=(naming.ANNOTATION_RESET_CHECKPOINT,) if checkpoint.clear_annotation else (),
        )

    config_map_name = naming.config_map_name(name)
    made: Identity | None = None  # read by `finish`: set once the spec is valid
    names: tuple[str, ...] = checked.unmarked  # refused for them: read again until marked
    bridge, config = checked.bridge, checkpoint.applied(checked.config)  # a reset reaches the job
    if bridge is None or config is None:
        outcome = BridgeOutcome(
            generation=generation,
            # what the applications still run as (a changed bridgeId is refused: acceptance.py)
            bridge_id=(previous or {}).get("bridgeId")
            or (bridge_id_of(bridge) if bridge is not None else None),
            spec_error="; ".join(problem.message for problem in checked.problems),
            applications=_observed_states(observed, name),
            config_map=config_map_name if observed.config_map else None,
        )
        return finish(outcome, [])

    base = BridgeOutcome(
        generation=generation,
        bridge_id=config.bridge_id,
        routes=tuple(r.name for r in config.routes),
        rejected_routes=tuple(judgement.rejected),
        config_map=config_map_name,
        connection_reports=tuple(connection_reports(reports)),
        stop_reports=tuple(stop_reports(reports)),
    )
    names = secret_names(bridge, config)
    made = identity(bridge, config)  # before the applications that run as it, whatever happens to them
    kept = kept_files(observed.config_map, observed.applications, config)  # a rollout's previous spec
    try:
        rendered: Rendered = render(bridge, config, job_image, _secrets(observed, config, names), kept)
    except InvalidApplication as error:  # spark.pod's volumes reach the SparkApplication as written
        problem = Problem(INVALID_SPEC, "spec.spark", f"the SparkApplication: {error}")
        checked = dataclasses.replace(checked, problems=(*checked.problems, problem))  # for `finish`
        outcome = dataclasses.replace(
            base, spec_error=problem.message, applications=_observed_states(observed, name)
        )
        return finish(outcome, [])

    foreign = [
        f"{child.get('kind')} {_meta(child).get('name')}"
        for child in [observed.config_map, *observed.applications]
        if child is not None and not is_ours(child, body)
    ]
    if foreign:
        conflict = (
            f"{', '.join(foreign)} already exist{'s' if len(foreign) == 1 else ''} and "
            f"{'is' if len(foreign) == 1 else 'are'} not owned by this bridge; delete or rename "
            f"{'it' if len(foreign) == 1 else 'them'}"
        )
        outcome = dataclasses.replace(base, conflict=conflict, applications=_observed_states(observed, name))
        return finish(outcome, [])

    writes = _config_map_writes(observed.config_map, rendered.config_map, [r.name for r in config.routes])

    verdict = gate(bridge, config)
    existing = {str(_meta(a).get("name")): a for a in observed.applications}
    if not verdict.open and verdict.transient and not bridge.spec.suspend:
        # A transient hold (e.g. Kafka unreachable within its grace period): change no application,
        # neither start nor stop nor update one, until the gate opens or the failure becomes hard.
        frozen = _observed_states(observed, name)
        outcome = dataclasses.replace(base, gate=verdict, applications=frozen)
        return finish(outcome, writes, verdict)
    stop = bridge.spec.suspend or not verdict.open
    desired = {} if stop else {str(_meta(a)["name"]): (i, a) for i, a in rendered.applications.items()}
    why_stop = "suspended" if bridge.spec.suspend else f"held by {verdict.reason}"
    for app_name, app in sorted(existing.items()):
        if app_name not in desired:
            message = (
                f"Deleted SparkApplication {app_name} ({why_stop if stop else 'instance no longer wanted'})"
            )
            writes.append(Write("delete", dict(app), "ApplicationDeleted", message))

    previous_active = (previous or {}).get("activeInstance")
    step = rollout.step({n: a for n, (_, a) in desired.items()}, existing, previous_active)
    states = []
    for app_name, (instance, app) in desired.items():
        current = existing.get(app_name)
        if current is None:
            writes.append(Write("create", app, "ApplicationCreated", f"Created SparkApplication {app_name}"))
            states.append(ApplicationState(instance, app_name))
            continue
        writes += _application_writes(app_name, current, app, app_name in step.replace, now)
        states.append(ApplicationState.observe(instance, app_name, current))

    outcome = dataclasses.replace(
        base,
        suspended=bridge.spec.suspend,
        gate=verdict,
        applications=tuple(states),
        rollout=step.progress,
        extra_conditions=_checkpoint_conditions(bridge, namespace, observed.claim),
    )
    return finish(outcome, writes, verdict)


def _secrets(observed: Observed, config: JobConfig, names: tuple[str, ...]) -> dict[str, str]:
    """Each instance's digest of its Secrets' versions: the one they have now when all are known, else
    the one its application carries (a version not read yet, or Secrets not followed, restarts nothing)."""
    if not names:
        return {}
    known = observed.secret_versions or {}
    if all(name in known for name in names):
        current = secrets_version({name: known[name] for name in names})
        return {instance: current for instance in instances(config)}
    carried = {}
    for app in observed.applications:
        instance = _instance_of(app)
        if instance and is_ours(app, observed.bridge) and (version := secrets_version_of(app)) is not None:
            carried[instance] = version
    return carried


def _only_secrets_changed(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether `desired` is what `current` was rendered as, but for its Secrets' versions (the hash
    `current` carries is of what we rendered, so the API server's defaults do not count)."""
    carried = secrets_version_of(current)
    if carried == secrets_version_of(desired):
        return False
    spec = copy.deepcopy(dict(desired.get("spec") or {}))
    annotations = spec.setdefault("driver", {}).setdefault("annotations", {})
    annotations.pop(naming.ANNOTATION_SECRETS_VERSION, None)
    if carried is not None:
        annotations[naming.ANNOTATION_SECRETS_VERSION] = carried
    return digest(spec) == spec_hash_of(dict(current))


def _config_map_writes(
    live: Mapping[str, Any] | None, desired: dict[str, Any], routes: list[str]
) -> list[Write]:
    name = desired["metadata"]["name"]
    in_effect = clip(f"{len(routes)} routes{': ' if routes else ''}{', '.join(routes)}")  # accepted
    if live is None:
        return [Write("create", desired, "ConfigCreated", clip(f"Created ConfigMap {name} ({in_effect})"))]
    if config_hash_of(dict(live)) != config_hash_of(desired):
        message = clip(f"Updated ConfigMap {name} ({in_effect})")
        return [Write("replace", replacement(live, desired), "ConfigUpdated", message)]
    if config_map_drift(live, desired):
        message = f"Restored ConfigMap {name} (its data was changed by hand)"
        return [Write("replace", replacement(live, desired), DRIFT_REPAIRED, message)]
    return _label_repair(live, desired)


def _checkpoint_conditions(
    bridge: JmsBridge, namespace: str | None, claim: Mapping[str, Any] | None
) -> tuple[Condition, ...]:
    name = claimed(bridge)
    return (claim_condition(name, str(namespace or ""), claim),) if name else ()


def _application_writes(
    name: str, current: Mapping[str, Any], desired: dict[str, Any], rolled_out: bool, now: str
) -> list[Write]:
    """The replacement of an existing application: its turn in a rollout, or a repair of a hand edit."""
    if rolled_out:
        body = replacement(current, desired)
        body["metadata"]["annotations"][naming.ANNOTATION_REPLACED_SUBMISSION] = rollout.submission(current)
        body["metadata"]["annotations"][naming.ANNOTATION_REPLACED_AT] = now
        secrets = _only_secrets_changed(current, desired)
        why = "a Secret it reads changed" if secrets else "bridge spec changed"
        message = f"Updated SparkApplication {name} ({why}; the spark-operator restarts it)"
        return [Write("replace", body, "ApplicationUpdated", message)]
    if spec_hash_of(dict(current)) != spec_hash_of(desired):
        return _label_repair(current, desired)  # outdated, waiting for its turn in the rollout
    if changed := application_drift(current, desired):
        message = (
            f"Restored SparkApplication {name}: {listed(changed)} changed by hand "
            "(the spark-operator restarts it)"
        )
        return [Write("replace", replacement(current, desired), DRIFT_REPAIRED, message)]
    return _label_repair(current, desired)
