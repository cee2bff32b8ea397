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
import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from bridge_job.config import CamelModel
from bridge_job.contract import redact
from jmsbridge_operator import naming
from jmsbridge_operator.checkpoint_reset import CheckpointResetStatus
from jmsbridge_operator.condition_catalogue import (
    ACCEPTED,
    APPLICATION_FAILED,
    APPLICATION_RESTARTING,
    CHECKPOINT_MISMATCH,
    DEGRADED,
    IN_EFFECT,
    INVALID_SPEC,
    JMS_AUTHENTICATION_FAILED,
    JMS_TLS_FAILED,
    NAME_CONFLICT,
    READY,
    RECONCILING,
    ROLLOUT_FAILED,
    RUNNING,
    STALLED,
    STANDBY_STARTING,
    STARTING,
    SUSPENDED,
)
from jmsbridge_operator.conditions import Condition, Problem, Transition, clip, join
from jmsbridge_operator.job_health import (
    RECONNECTING_REASONS,
    SYSTEMS,
    ConnectionReport,
    StopReport,
    connection_conditions,
)
from jmsbridge_operator.kafka_checks.gate import OPEN, GateVerdict
from jmsbridge_operator.lease_status import BridgeLease, Election, elect, parse_time
from jmsbridge_operator.restarts import (
    FAILURE_THRESHOLD,
    Attempts,
    LastFailure,
    counted,
    recovered,
    seconds_between,
    will_retry,
)
from jmsbridge_operator.rollout import Progress
from jmsbridge_operator.timing import DEFAULT_TIMING, Timing

# SparkApplication states (spark-operator v1beta2) sorted into what they mean for a bridge.
RUNNING_STATES = frozenset({"RUNNING"})
FAILED_STATES = frozenset({"FAILED", "SUBMISSION_FAILED", "FAILING", "COMPLETED", "SUCCEEDING"})
NEW_STATE = "NEW"  # the spark-operator's state before it first looks at an application is ""


class InstanceStatus(CamelModel):
    name: str = Field(description="The instance (`primary`, `secondary`).")
    application: str = Field(description="Its SparkApplication.")
    role: Literal["active", "standby"] | None = None
    """active: it moves the data (holds the Lease); standby: it waits to take over."""
    state: str = Field(description="The SparkApplication's applicationState.state (NEW before submission).")
    message: str | None = None
    """The SparkApplication's errorMessage (the job's stop line, credentials redacted)."""
    attempts: int | None = Field(default=None, description="The SparkApplication's executionAttempts.")
    start_time: str | None = Field(
        default=None, description="The SparkApplication's lastSubmissionAttemptTime (its last start)."
    )
    failures: int | None = Field(
        default=None,
        description=f"The same failure this many times in a row; Stalled at {FAILURE_THRESHOLD} "
        "(docs/operator.md, Failures and restarts).",
    )
    last_failure: LastFailure | None = None


class BridgeStatus(CamelModel):
    observed_generation: int | None = None
    """The metadata.generation this status was written for."""
    conditions: list[Condition] = Field(default_factory=list)
    """Ready, Reconciling, Stalled, KafkaReady and the job's connection conditions (docs/operator.md,
    Status; docs/troubleshooting.md maps every reason)."""
    bridge_id: str | None = None
    """The bridge id in effect (spec.bridgeId, else metadata.name)."""
    active_instance: str | None = Field(
        default=None,
        description="The SparkApplication that moves the data: with a standby, the one whose instance holds "
        "the bridge's Lease; without, the one running.",
    )
    failovers: int | None = Field(
        default=None,
        description="With a standby: how often the active instance changed (the Lease's transitions).",
    )
    last_failover_time: str | None = Field(
        default=None, description="When the current holder of the Lease took it over (its acquireTime)."
    )
    lease_holder: str | None = Field(
        default=None, description="The last holderIdentity of the bridge's Lease: `<instance>/<pod>`."
    )
    instances: list[InstanceStatus] = Field(default_factory=list)
    """Each SparkApplication of the bridge: its state, role and failures."""
    routes: list[str] = Field(default_factory=list, description="Routes in effect, in the order tried.")
    route_count: int = 0
    """How many routes are in effect."""
    rejected_routes: list[str] = Field(default_factory=list)
    """Routes of this bridge refused (each route's status says why)."""
    config_map: str | None = None
    """The ConfigMap holding the job's configuration."""
    checkpoint_reset: CheckpointResetStatus | None = None
    """The last checkpoint reset asked for (the annotation jmsbridge.dev/reset-checkpoint) and whether it
    is done."""
    records_lost: dict[str, int] | None = Field(
        default=None,
        description="Records that left a topic (retention) before the bridge read them, skipped because "
        "spec.spark.onDataLoss is skip: per topic, since the checkpoint began.",
    )


class RouteStatus(CamelModel):
    observed_generation: int | None = None
    """The metadata.generation this status was written for."""
    conditions: list[Condition] = Field(default_factory=list)
    """Accepted (in effect in its bridge) or Stalled, with the reason."""
    bridge: str | None = None
    """The JmsBridge the route belongs to."""
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
    attempts: Attempts = dataclasses.field(default_factory=Attempts)
    reported_attempts: bool = False  # whether the spark-operator counts them (it does once it submits)
    retried: bool = False  # whether the spark-operator restarts it in this state (its restartPolicy)

    @classmethod
    def observe(cls, instance: str, application: str, body: Mapping[str, Any] | None) -> ApplicationState:
        status = (body or {}).get("status") or {}
        app_state = status.get("applicationState") or {}
        state = str(app_state.get("state") or "").upper() or NEW_STATE
        message = app_state.get("errorMessage") or None
        attempts = Attempts.observe(status)
        policy = ((body or {}).get("spec") or {}).get("restartPolicy")
        return cls(
            instance,
            application,
            state,
            clip(redact(message)) if message else None,  # the job's own stop line may be in it
            attempts,
            "executionAttempts" in status,
            will_retry(policy, state, attempts),
        )

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
    rollout: Progress | None = None  # a change of the spec under way, instance by instance
    lease: BridgeLease | None = None  # with a standby: the Lease that decides the active instance
    extra_conditions: tuple[Condition, ...] = ()  # e.g. whether the checkpoint can be shared
    connection_reports: tuple[ConnectionReport, ...] = ()  # what the running job says of its brokers
    stop_reports: tuple[StopReport, ...] = ()  # why a job stopped, when it said so (job_health.py)
    checkpoint_reset: CheckpointResetStatus | None = None  # the last one asked for (checkpoint_reset.py)
    records_lost: Mapping[str, int] | None = None  # per topic, skipped with spark.onDataLoss: skip
    timing: Timing = DEFAULT_TIMING


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
            "message": clip(redact(condition.message)),  # whatever a broker or client put in it
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


@dataclasses.dataclass(frozen=True)
class _Streak:
    """How often an instance's application failed the same way in a row (`restarts`)."""

    failures: int = 0
    last: LastFailure | None = None


def _streaks(
    apps: Sequence[ApplicationState],
    previous: Mapping[str, Any],
    generation: int | None,
    now: str,
    window: float,
) -> dict[str, _Streak]:
    """Each instance's failure streak: counted while it fails, kept while it does not run (so a bridge
    stalled by a crash loop stays stalled between restarts), dropped once it has run for `window` since,
    and started afresh with a new spec."""
    same_spec = previous.get("observedGeneration") == generation
    instances = previous.get("instances") or [] if same_spec else []
    before = {i.get("application"): i for i in instances if isinstance(i, Mapping)}
    streaks = {}
    for app in apps:
        old = before.get(app.application) or {}
        try:
            last = LastFailure.model_validate(old["lastFailure"]) if old.get("lastFailure") else None
        except ValueError:
            last = None  # not written by us: count afresh
        failures = int(old.get("failures") or 0)
        if app.failed:
            was_failed = str(old.get("state") or "") in FAILED_STATES
            last, failures = counted(last, failures, was_failed, app.message or "", app.attempts, now, window)
        elif app.running and last is not None and recovered(last, now, window):
            last, failures = None, 0
        streaks[app.application] = _Streak(failures, last)
    return streaks


def given_up(app: ApplicationState, streaks: Mapping[str, _Streak]) -> bool:
    """An instance that is not running after failing the same way too often: restarting does not help."""
    streak = streaks.get(app.application)
    return not app.running and streak is not None and streak.failures >= FAILURE_THRESHOLD


def failure_recheck(status: Mapping[str, Any], window: float) -> datetime.datetime | None:
    """When the failure record of a running instance is due to be dropped (`_streaks`)."""
    due = []
    for instance in status.get("instances") or []:
        last = instance.get("lastFailure") or {}
        seen = parse_time(str(last.get("time") or "")) if instance.get("state") == "RUNNING" else None
        if seen is not None:
            due.append(seen + datetime.timedelta(seconds=window + 1))
    return min(due) if due else None


def _bridge_conditions(
    outcome: BridgeOutcome,
    active: ApplicationState | None,
    streaks: Mapping[str, _Streak],
    election: Election | None = None,
) -> list[Condition]:
    apps = outcome.applications

    def stalled(reason: str, message: str) -> list[Condition]:
        return [Condition(READY, "False", reason, message), Condition(STALLED, "True", reason, message)]

    if outcome.spec_error is not None:
        still = " Applications keep running the last valid spec." if apps else ""
        return stalled(INVALID_SPEC, f"Invalid spec: {outcome.spec_error}.{still}")
    if outcome.conflict is not None:
        return stalled(NAME_CONFLICT, outcome.conflict)
    if outcome.suspended:
        return [Condition(READY, "False", SUSPENDED, "Suspended (spec.suspend): applications stopped.")]
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
        running = [
            c for c in _application_conditions(outcome, active, streaks, election) if c.type != RECONCILING
        ]
        return [*running, Condition(RECONCILING, "True", gate.reason, gate.message)]
    return _application_conditions(outcome, active, streaks, election)


def _application_conditions(
    outcome: BridgeOutcome,
    active: ApplicationState | None,
    streaks: Mapping[str, _Streak],
    election: Election | None = None,
) -> list[Condition]:
    apps = outcome.applications
    routes = f"{len(outcome.routes)} route{'s' if len(outcome.routes) != 1 else ''}"
    if active is not None:
        others = [a for a in apps if a is not active]
        standby = "".join(f", {a.application} standby" for a in others if a.running)
        running = f"Running with {routes}: {active.application} active{standby}"
        if all(a.running for a in others):
            return [Condition(READY, "True", RUNNING, f"{running}.")]
        if any(a.failed or given_up(a, streaks) for a in others):
            down = "; ".join(a.describe() for a in others if a.failed or given_up(a, streaks))
            return [Condition(READY, "True", DEGRADED, f"{running}; no standby: {down}.")]
        starting = "; ".join(a.describe() for a in others if not a.running)
        return [
            Condition(READY, "True", RUNNING, f"{running}; standby starting: {starting}."),
            Condition(RECONCILING, "True", STANDBY_STARTING, f"Standby starting: {starting}."),
        ]
    if election is not None and election.nobody:
        return election.ready_conditions()  # the applications run, and no instance of them is active
    failed = [a for a in apps if a.failed or given_up(a, streaks)]
    if failed:
        return _failed_conditions(failed, streaks, outcome.stop_reports)
    waiting = "; ".join(a.describe() for a in apps) or "no SparkApplication yet"
    message = f"Starting: {waiting}."
    return [
        Condition(READY, "False", STARTING, message),
        Condition(RECONCILING, "True", STARTING, message),
    ]


# Stops the job reports with a reason of its own, besides a checkpoint mismatch (which stalls at once).
_JOB_STOP_REASONS = frozenset({JMS_AUTHENTICATION_FAILED, JMS_TLS_FAILED})


def _failed_conditions(
    failed: Sequence[ApplicationState], streaks: Mapping[str, _Streak], stops: Sequence[StopReport] = ()
) -> list[Condition]:
    """Stalled once no failed application will be restarted or each failed the same way too often; at
    once when its job stopped on a checkpoint mismatch, which no restart mends (a person resets it)."""
    instances = {a.instance for a in failed}
    mismatch = next((s for s in stops if s.reason == CHECKPOINT_MISMATCH and s.instance in instances), None)
    if mismatch is not None:
        message = (
            f"{mismatch.message} (instance {mismatch.instance}). Under the operator, annotate this "
            f"JmsBridge instead: {naming.ANNOTATION_RESET_CHECKPOINT}=earliest|committed|latest "
            "(docs/operator.md#checkpoint-reset)."
        )
        return [
            Condition(READY, "False", CHECKPOINT_MISMATCH, message),
            Condition(STALLED, "True", CHECKPOINT_MISMATCH, message),
        ]

    def count(app: ApplicationState) -> int:
        return streaks[app.application].failures if app.application in streaks else 0

    def exhausted(app: ApplicationState) -> bool:
        return not app.retried or count(app) >= FAILURE_THRESHOLD

    def why(app: ApplicationState) -> str:
        if not app.retried:
            return f"{app.describe()}; its restartPolicy restarts it no more"
        if exhausted(app):
            last = streaks[app.application].last
            said = f" ({last.message})" if not app.failed and last is not None and last.message else ""
            return (
                f"{app.describe()}; the same failure {count(app)} times in a row{said}: "
                "restarting does not help"
            )
        return (
            f"{app.describe()}; the spark-operator restarts it (failure {count(app)} of "
            f"{FAILURE_THRESHOLD} before the bridge stalls)"
        )

    message = "; ".join(why(a) for a in failed) + "."
    given_up = all(exhausted(a) for a in failed)
    reason = APPLICATION_FAILED if given_up else APPLICATION_RESTARTING
    # The job said why it stopped: its reason, and its line first (a restart mends it once fixed).
    said = next((s for s in stops if s.reason in _JOB_STOP_REASONS and s.instance in instances), None)
    if said is not None:
        reason, message = said.reason, f"{said.message} (instance {said.instance}); {message}"
    flag = STALLED if given_up else RECONCILING
    return [Condition(READY, "False", reason, message), Condition(flag, "True", reason, message)]


def _with_connections(current: list[Condition], connections: list[Condition]) -> list[Condition]:
    """An active instance that lost its JMS broker or Kafka moves nothing: not Ready, Reconciling while
    it waits the outage out (unless the bridge stalled for another reason)."""
    reasons = {system.condition: system.reason for system in SYSTEMS}
    failing = [c for c in connections if c.status != "True"]
    if not failing or any(c.type == STALLED for c in current):
        return current
    kept = [c for c in current if c.type not in (READY, RECONCILING)]
    why = (reasons[failing[0].type], failing[0].message)
    return [Condition(READY, "False", *why), Condition(RECONCILING, "True", *why), *kept]


def _with_rollout(
    current: list[Condition],
    progress: Progress | None,
    apps: Sequence[ApplicationState],
    streaks: Mapping[str, _Streak],
    now: str,
    deadline: float,
) -> list[Condition]:
    """A rollout under way is what Reconciling says, unless the bridge stalled. Meanwhile a standby's
    crash is the rollout's news, not a change of Ready (which would flap with every restart); a standby
    that fails the new spec for good or does not run it in time fails the rollout."""
    if progress is None or any(c.type == STALLED for c in current):
        return current
    kept = [c for c in current if c.type not in (READY, RECONCILING)]
    ready = next((c for c in current if c.type == READY), None)
    if ready is not None and ready.status == "True":
        failure = _rollout_failure(progress, apps, streaks, now, deadline)
        if failure is not None:
            stalled = [
                Condition(READY, "True", ROLLOUT_FAILED, failure),
                Condition(STALLED, "True", ROLLOUT_FAILED, failure),
            ]
            return [*stalled, *kept]
        ready = Condition(READY, "True", RUNNING, ready.message)
    return [
        *([ready] if ready else []),
        *kept,
        Condition(RECONCILING, "True", progress.reason, progress.message),
    ]


def _rollout_failure(
    progress: Progress,
    apps: Sequence[ApplicationState],
    streaks: Mapping[str, _Streak],
    now: str,
    deadline: float,
) -> str | None:
    """Why the rollout failed, naming the standby and its error; None while it may still succeed."""
    awaited = [a for a in apps if a.application in progress.awaiting]
    if not awaited:
        return None
    active = ", ".join(a.application for a in apps if a.application not in progress.awaiting)
    keeps = f"{active or 'the active instance'} keeps running the previous spec; fix the spec or revert it"
    for app in awaited:
        streak = streaks.get(app.application) or _Streak()
        if (app.failed and not app.retried) or given_up(app, streaks):
            error = streak.last.message if streak.last is not None and streak.last.message else app.state
            times = f" {streak.failures} times" if streak.failures > 1 else ""
            failed = f"{app.application} ({app.instance}) failed with the new spec{times}"
            return f"Rollout failed: {failed}: {error}. {keeps}."
    if progress.since is not None and seconds_between(progress.since, now) > deadline:
        states = "; ".join(app.describe() for app in awaited)
        return (
            f"Rollout failed: {', '.join(a.application for a in awaited)} did not run the new spec within "
            f"{deadline:g} s ({states}). {keeps}."
        )
    return None


def rollout_recheck(progress: Progress | None, deadline: float) -> datetime.datetime | None:
    """When a rollout waiting for a standby runs out of time (`_rollout_failure`)."""
    since = parse_time(progress.since) if progress is not None and progress.awaiting else None
    return since + datetime.timedelta(seconds=deadline + 1) if since is not None else None


def _role(app: ApplicationState, active: ApplicationState | None) -> Literal["active", "standby"] | None:
    if app is active:
        return "active"  # the Lease says so, whatever state the spark-operator last reported
    return "standby" if active is not None and app.running else None


def bridge_status(outcome: BridgeOutcome, previous: Mapping[str, Any] | None, now: str) -> dict[str, Any]:
    """The bridge's full `status` for an outcome, given the status it had before."""
    previous = previous or {}
    previous_active = previous.get("activeInstance")
    apps = outcome.applications
    # Stopped applications have no active instance; a transient hold leaves running ones running.
    held = outcome.suspended or not (outcome.gate.open or outcome.gate.transient)
    election = None
    failovers: int | None
    if outcome.lease is not None and not held:
        moment = parse_time(now)
        assert moment is not None, f"now {now!r} is no RFC 3339 time"
        by_instance = {a.instance: a.application for a in apps}
        election = elect(outcome.lease, by_instance, any(a.running for a in apps), previous, moment)
        active = next((a for a in apps if a.application == election.active), None)
        failovers = election.failovers
    else:
        active = None if held else _choose_active(apps, previous_active)
        failovers = int(previous.get("failovers") or 0)
        if active is not None and previous_active and active.application != previous_active:
            failovers += 1
        if outcome.lease is None and len(apps) <= 1:
            failovers = None  # one instance never fails over: no count at all
    streaks = _streaks(apps, previous, outcome.generation, now, outcome.timing.failure_window_seconds)
    current = _with_rollout(
        _bridge_conditions(outcome, active, streaks, election),
        outcome.rollout,
        apps,
        streaks,
        now,
        outcome.timing.rollout_deadline_seconds,
    )
    running = {active.instance} if active is not None else set()
    connections = connection_conditions(list(outcome.connection_reports), running)
    current = _with_connections(current, connections)
    extra = [*outcome.gate.conditions, *outcome.extra_conditions, *connections]
    if election is not None and election.condition is not None:
        extra.append(election.condition)
    current.extend(sorted(extra, key=lambda c: c.type))
    instances = [
        InstanceStatus(
            name=a.instance,
            application=a.application,
            role=_role(a, active),
            state=a.state,
            message=a.message,
            attempts=a.attempts.execution if a.reported_attempts else None,
            start_time=a.attempts.start_time,
            failures=streaks[a.application].failures or None,
            last_failure=streaks[a.application].last,
        )
        for a in apps
    ]
    status = BridgeStatus(
        observed_generation=outcome.generation,
        bridge_id=outcome.bridge_id,
        active_instance=active.application if active is not None else None,
        failovers=failovers,
        last_failover_time=election.last_failover_time if election is not None else None,
        lease_holder=election.lease_holder if election is not None else None,
        instances=instances,
        routes=list(outcome.routes),
        route_count=len(outcome.routes),
        rejected_routes=list(outcome.rejected_routes),
        config_map=outcome.config_map,
        checkpoint_reset=outcome.checkpoint_reset,
        records_lost=dict(outcome.records_lost) if outcome.records_lost else None,
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
            Condition(READY, "True", IN_EFFECT, verdict.message),
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


def ready_transition(previous: Mapping[str, Any] | None, current: Mapping[str, Any]) -> Transition | None:
    """An Event when the Ready condition changed its status or reason (not its message alone), or when
    the bridge stalled or stopped stalling with the same reason (`KafkaUnreachable` past its grace period).
    A first Ready posts one only when it is a warning (an invalid spec, say).
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
    warned = stalled or new.get("reason") in (DEGRADED, APPLICATION_RESTARTING, *RECONNECTING_REASONS)
    if old is None and not warned:
        return None  # a new bridge starting: its ConfigCreated and ApplicationCreated say so
    kind: Literal["Normal", "Warning"] = "Warning" if warned else "Normal"
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
