"""Status a user can trust: SparkApplication states and route verdicts mapped into kstatus conditions.

Flux (kstatus) and Argo CD read the same conventions: `status.observedGeneration`, and `conditions[]` with
`type`, `status`, `reason` (one CamelCase word), `message` and `lastTransitionTime`. We set

- `Ready` (normal polarity, always present): True when the bridge moves data;
- `Reconciling` (abnormal polarity, present only when True): on the way to Ready, e.g. applications
  submitted but not running yet;
- `Stalled` (abnormal polarity, present only when True): a hard failure that needs a person, e.g. an
  invalid spec or a failed application; the message says what to fix.

The spark-operator's SparkApplication has no conditions, only `status.applicationState.state`; the
functions here map those states into ours. A `lastTransitionTime` is kept while a condition's status stays
the same, so that a status write that changes nothing else changes nothing at all (and an operator
restart writes nothing).

Everything here is pure: plain data in, plain data out. The models double as the CRDs' status schemas.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from bridge_job.config import CamelModel
from jmsbridge_operator.conditions import INVALID_SPEC, Condition, Problem, clip, join
from jmsbridge_operator.kafka_checks.gate import OPEN, GateVerdict

READY = "Ready"
RECONCILING = "Reconciling"
STALLED = "Stalled"
ACCEPTED = "Accepted"

# SparkApplication states (spark-operator v1beta2) sorted into what they mean for a bridge.
RUNNING_STATES = frozenset({"RUNNING"})
FAILED_STATES = frozenset({"FAILED", "SUBMISSION_FAILED", "FAILING", "COMPLETED", "SUCCEEDING"})
NEW_STATE = "NEW"  # the spark-operator's state before it first looks at an application is ""


class InstanceStatus(CamelModel):
    name: str = Field(description="The instance (`primary`, `secondary`).")
    application: str = Field(description="Its SparkApplication.")
    role: Literal["active", "standby"] | None = None
    state: str = Field(description="The SparkApplication's applicationState.state (NEW before submission).")
    message: str | None = None


class BridgeStatus(CamelModel):
    observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list)
    bridge_id: str | None = None
    active_instance: str | None = Field(
        default=None, description="The SparkApplication that moves the data (derived from their states)."
    )
    failovers: int = Field(default=0, description="How often the active instance changed.")
    instances: list[InstanceStatus] = Field(default_factory=list)
    routes: list[str] = Field(default_factory=list, description="Routes in effect, in the order tried.")
    route_count: int = 0
    rejected_routes: list[str] = Field(default_factory=list)
    config_map: str | None = None


class RouteStatus(CamelModel):
    observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list)
    bridge: str | None = None
    position: int | None = Field(default=None, description="1-based place among the bridge's routes.")


# ---------------------------------------------------------------------------------------------------
# Inputs


@dataclasses.dataclass(frozen=True)
class ApplicationState:
    """What we observed of one instance's SparkApplication."""

    instance: str
    application: str
    state: str = NEW_STATE
    message: str | None = None

    @classmethod
    def observe(cls, instance: str, application: str, body: Mapping[str, Any] | None) -> ApplicationState:
        app_state = ((body or {}).get("status") or {}).get("applicationState") or {}
        state = str(app_state.get("state") or "").upper() or NEW_STATE
        message = app_state.get("errorMessage") or None
        return cls(instance, application, state, clip(message) if message else None)

    @property
    def running(self) -> bool:
        return self.state in RUNNING_STATES

    @property
    def failed(self) -> bool:
        return self.state in FAILED_STATES

    def describe(self) -> str:
        text = f"SparkApplication {self.application} is {self.state}"
        return f"{text}: {self.message}" if self.message else text


@dataclasses.dataclass(frozen=True)
class BridgeOutcome:
    """Everything the bridge's status is computed from; assembled by the reconciler."""

    generation: int | None
    bridge_id: str | None = None
    spec_error: str | None = None
    conflict: str | None = None
    suspended: bool = False
    gate: GateVerdict = OPEN
    applications: tuple[ApplicationState, ...] = ()
    routes: tuple[str, ...] = ()
    rejected_routes: tuple[str, ...] = ()
    config_map: str | None = None


@dataclasses.dataclass(frozen=True)
class RouteVerdict:
    """Whether a route is in effect (it has no problem), and if not, why."""

    name: str
    bridge: str | None = None
    position: int | None = None  # in effect: its 1-based place among the bridge's routes
    problems: tuple[Problem, ...] = ()
    # Not the route's own fault (e.g. its bridge is invalid): no Stalled condition on the route.
    stalls: bool = True

    @property
    def accepted(self) -> bool:
        return not self.problems

    @property
    def reason(self) -> str:
        return self.problems[0].reason if self.problems else ACCEPTED

    @property
    def message(self) -> str:
        if self.problems:
            return join([problem.message for problem in self.problems])
        return f"In effect for bridge {self.bridge} at position {self.position}"


# ---------------------------------------------------------------------------------------------------
# Conditions


def conditions(
    current: Iterable[Condition], previous: Sequence[Mapping[str, Any]], generation: int | None, now: str
) -> list[dict[str, Any]]:
    """Conditions with `lastTransitionTime` kept from `previous` when a condition's status is unchanged."""
    before = {c.get("type"): c for c in previous if isinstance(c, Mapping)}
    result = []
    for condition in current:
        old = before.get(condition.type)
        unchanged = (
            old is not None and old.get("status") == condition.status and old.get("lastTransitionTime")
        )
        written = {
            "last_transition_time": str(old["lastTransitionTime"]) if unchanged and old else now,
            "observed_generation": generation,
        }
        result.append(condition.model_copy(update=written).dump())
    return result


def find_condition(status: Mapping[str, Any] | None, type_: str) -> Mapping[str, Any] | None:
    for condition in (status or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == type_:
            return condition
    return None


# ---------------------------------------------------------------------------------------------------
# Bridges


def _choose_active(apps: Sequence[ApplicationState], previous_active: str | None) -> ApplicationState | None:
    running = [a for a in apps if a.running]
    for app in running:
        if app.application == previous_active:
            return app  # no flapping: the active instance stays active while it runs
    return running[0] if running else None


def _bridge_conditions(outcome: BridgeOutcome, active: ApplicationState | None) -> list[Condition]:
    apps = outcome.applications

    def stalled(reason: str, message: str) -> list[Condition]:
        return [Condition(READY, "False", reason, message), Condition(STALLED, "True", reason, message)]

    if outcome.spec_error is not None:
        still = " Applications keep running the last valid spec." if apps else ""
        return stalled(INVALID_SPEC, f"Invalid spec: {outcome.spec_error}.{still}")
    if outcome.conflict is not None:
        return stalled("NameConflict", outcome.conflict)
    if outcome.suspended:
        return [Condition(READY, "False", "Suspended", "Suspended (spec.suspend): applications stopped.")]
    gate = outcome.gate
    if not gate.open:
        if not gate.transient:
            return stalled(gate.reason, gate.message)
        if active is None:
            return [
                Condition(READY, "False", gate.reason, gate.message),
                Condition(RECONCILING, "True", gate.reason, gate.message),
            ]
        # Held while it runs (a check under way, Kafka not answering within its grace period): the
        # applications keep running untouched, Ready follows them, and Reconciling says what is awaited.
        running = [c for c in _application_conditions(outcome, active) if c.type != RECONCILING]
        return [*running, Condition(RECONCILING, "True", gate.reason, gate.message)]
    return _application_conditions(outcome, active)


def _application_conditions(outcome: BridgeOutcome, active: ApplicationState | None) -> list[Condition]:
    apps = outcome.applications
    routes = f"{len(outcome.routes)} route{'s' if len(outcome.routes) != 1 else ''}"
    if active is not None:
        others = [a for a in apps if a is not active]
        standby = "".join(f", {a.application} standby" for a in others if a.running)
        running = f"Running with {routes}: {active.application} active{standby}"
        if all(a.running for a in others):
            return [Condition(READY, "True", "Running", f"{running}.")]
        if any(a.failed for a in others):
            down = "; ".join(a.describe() for a in others if a.failed)
            return [Condition(READY, "True", "Degraded", f"{running}; no standby: {down}.")]
        starting = "; ".join(a.describe() for a in others if not a.running)
        return [
            Condition(READY, "True", "Running", f"{running}; standby starting: {starting}."),
            Condition(RECONCILING, "True", "StandbyStarting", f"Standby starting: {starting}."),
        ]
    failed = [a for a in apps if a.failed]
    if failed:
        message = "; ".join(a.describe() for a in failed) + "."
        return [
            Condition(READY, "False", "ApplicationFailed", message),
            Condition(STALLED, "True", "ApplicationFailed", message),
        ]
    waiting = "; ".join(a.describe() for a in apps) or "no SparkApplication yet"
    message = f"Starting: {waiting}."
    return [
        Condition(READY, "False", "Starting", message),
        Condition(RECONCILING, "True", "Starting", message),
    ]


def bridge_status(outcome: BridgeOutcome, previous: Mapping[str, Any] | None, now: str) -> dict[str, Any]:
    """The bridge's full `status` for an outcome, given the status it had before."""
    previous = previous or {}
    previous_active = previous.get("activeInstance")
    apps = outcome.applications
    # Stopped applications have no active instance; a transient hold leaves running ones running.
    held = outcome.suspended or not (outcome.gate.open or outcome.gate.transient)
    active = None if held else _choose_active(apps, previous_active)
    failovers = int(previous.get("failovers") or 0)
    if active is not None and previous_active and active.application != previous_active:
        failovers += 1
    current = _bridge_conditions(outcome, active)
    current.extend(sorted(outcome.gate.conditions, key=lambda c: c.type))
    instances = [
        InstanceStatus(
            name=a.instance,
            application=a.application,
            role=None if active is None or not a.running else ("active" if a is active else "standby"),
            state=a.state,
            message=a.message,
        )
        for a in apps
    ]
    status = BridgeStatus(
        observed_generation=outcome.generation,
        bridge_id=outcome.bridge_id,
        active_instance=active.application if active is not None else None,
        failovers=failovers,
        instances=instances,
        routes=list(outcome.routes),
        route_count=len(outcome.routes),
        rejected_routes=list(outcome.rejected_routes),
        config_map=outcome.config_map,
    ).dump()
    status["conditions"] = conditions(current, previous.get("conditions") or [], outcome.generation, now)
    return status


# ---------------------------------------------------------------------------------------------------
# Routes


def route_status(
    verdict: RouteVerdict, generation: int | None, previous: Mapping[str, Any] | None, now: str
) -> dict[str, Any]:
    """A route's full `status` for its verdict."""
    previous = previous or {}
    if verdict.accepted:
        current = [
            Condition(ACCEPTED, "True", ACCEPTED, verdict.message),
            Condition(READY, "True", "InEffect", verdict.message),
        ]
    else:
        current = [
            Condition(ACCEPTED, "False", verdict.reason, verdict.message),
            Condition(READY, "False", verdict.reason, verdict.message),
        ]
        if verdict.stalls:
            current.append(Condition(STALLED, "True", verdict.reason, verdict.message))
    status = RouteStatus(
        observed_generation=generation, bridge=verdict.bridge, position=verdict.position
    ).dump()
    status["conditions"] = conditions(current, previous.get("conditions") or [], generation, now)
    return status


# ---------------------------------------------------------------------------------------------------
# Events


@dataclasses.dataclass(frozen=True)
class Transition:
    """A change worth a Kubernetes Event."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str


def ready_transition(previous: Mapping[str, Any] | None, current: Mapping[str, Any]) -> Transition | None:
    """An Event when the Ready condition changed its status or reason (not its message alone), or when
    the bridge stalled or stopped stalling with the same reason (`KafkaUnreachable` past its grace period).
    """
    old = find_condition(previous, READY)
    new = find_condition(current, READY)
    if new is None:
        return None
    stalled = find_condition(current, STALLED) is not None
    was_stalled = find_condition(previous, STALLED) is not None
    if old is not None and (old.get("status"), old.get("reason"), was_stalled) == (
        new.get("status"),
        new.get("reason"),
        stalled,
    ):
        return None
    kind: Literal["Normal", "Warning"] = "Warning" if stalled or new.get("reason") == "Degraded" else "Normal"
    return Transition(kind, str(new.get("reason")), str(new.get("message") or ""))


def status_patch(previous: Mapping[str, Any] | None, current: Mapping[str, Any]) -> dict[str, Any] | None:
    """The merge patch that turns `previous` into `current` (None when nothing changes).

    We own the whole status (kopf keeps its bookkeeping in annotations), so fields that `current` no
    longer has are removed.
    """
    previous = previous or {}
    if dict(previous) == dict(current):
        return None
    patch: dict[str, Any] = {key: None for key in previous if key not in current}
    patch.update(current)
    return patch
