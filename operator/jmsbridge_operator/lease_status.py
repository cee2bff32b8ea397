"""The bridge's Lease in its status: which instance is active, how often that changed, and when nobody is.

With `failover.standby` the two instances of a bridge elect their active one over the Lease
`<bridgeId>-jms-bridge` in the bridge's namespace (`bridge_job/kube/leadership.py`). The Lease decides, so the
status reports it rather than guessing from SparkApplication states:

- `activeInstance`: the SparkApplication of the holder's instance (`holderIdentity` is `<instance>/<pod>`);
- `leaseHolder`: the last `holderIdentity` the Lease named (kept after a release, so that the next holder
  can be announced as `old -> new`);
- `failovers`: the Lease's `leaseTransitions`; `lastFailoverTime`: the `acquireTime` of the tenure that
  began with the last transition;
- the condition `ActiveInstance`, present while an application says RUNNING: True while an instance holds
  the Lease, False (`AwaitingLease`) when nobody does, and `NoActiveInstance` once nobody has for longer
  than the lease duration. Its `lastTransitionTime` is when the operator first saw nobody holding it, so
  the count survives an operator restart and starts no earlier than the applications run.

Nobody holds the Lease when it is absent, has no holder (a clean stop released it), or was not renewed
within its `leaseDurationSeconds`. The job's clock writes `renewTime` and the operator's clock reads it:
a skew between them shifts when the operator notices an expiry, nothing else (the election itself never
compares clocks). Everything here is pure.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from bridge_job.config import lease_name
from jmsbridge_operator.bridge_ids import effective_id
from jmsbridge_operator.condition_catalogue import (
    ACTIVE_INSTANCE,
    AWAITING_LEASE,
    LEASE_HELD,
    NO_ACTIVE_INSTANCE,
    READY,
    RECONCILING,
    STALLED,
)
from jmsbridge_operator.conditions import Condition

FAILOVER = "Failover"  # the Event of a new holder
LEASE_SUFFIX = lease_name("")


def parse_time(text: Any) -> datetime.datetime | None:
    """An RFC 3339 time (a MicroTime too) as an aware datetime; None when absent or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)


def format_time(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def instance_of(holder: str) -> str:
    """The instance named by a holder identity `<instance>/<pod>`."""
    return holder.split("/", 1)[0]


@dataclasses.dataclass(frozen=True)
class BridgeLease:
    """The Lease a bridge's instances elect over, and what it said when the reconciler read it."""

    namespace: str
    name: str
    duration_seconds: float  # the bridge's failover.leaseDurationSeconds, for a Lease not written yet
    body: Mapping[str, Any] | None = None  # None: there is no such Lease

    @property
    def spec(self) -> Mapping[str, Any]:
        return (self.body or {}).get("spec") or {}

    @property
    def named_holder(self) -> str | None:
        """The holderIdentity the Lease names, current or expired."""
        return str(self.spec.get("holderIdentity") or "") or None

    @property
    def duration(self) -> datetime.timedelta:
        seconds = self.spec.get("leaseDurationSeconds") or self.duration_seconds
        return datetime.timedelta(seconds=float(seconds))

    @property
    def transitions(self) -> int:
        return int(self.spec.get("leaseTransitions") or 0)

    def expiry(self) -> datetime.datetime | None:
        """When the named holder's tenure ends unless renewed (None: nobody named, or no renewTime)."""
        renewed = parse_time(self.spec.get("renewTime")) or parse_time(self.spec.get("acquireTime"))
        return renewed + self.duration if self.named_holder and renewed else None

    def holder_at(self, now: datetime.datetime) -> str | None:
        """The holder whose tenure is valid at `now`."""
        expiry = self.expiry()
        return self.named_holder if expiry is not None and now < expiry else None

    def why_unheld(self) -> str:
        where = f"Lease {self.name} in namespace {self.namespace}"
        if self.body is None:
            return f"{where} does not exist"
        if holder := self.named_holder:
            renewed = self.spec.get("renewTime") or "never"
            return f"{where} was last renewed by {holder} at {renewed}"
        if not (self.spec.get("renewTime") or self.spec.get("acquireTime")):
            return f"{where} has never been held"  # as the operator made it (identity.py)
        return f"{where} has no holder (released at {self.spec.get('renewTime') or 'an unknown time'})"


def observed_lease(bridge: Mapping[str, Any], lease: Mapping[str, Any] | None) -> BridgeLease | None:
    """The Lease of a bridge body that runs a standby pair (read leniently: the spec may be invalid)."""
    spec = bridge.get("spec") or {}
    failover = spec.get("failover") if isinstance(spec, Mapping) else None
    if not isinstance(failover, Mapping) or failover.get("standby") is not True:
        return None
    return BridgeLease(
        str((bridge.get("metadata") or {}).get("namespace") or ""),
        lease_name(effective_id(bridge)),
        float(failover.get("leaseDurationSeconds") or 10),
        lease,
    )


@dataclasses.dataclass(frozen=True)
class Election:
    """What the Lease says about a bridge at one moment, in the words of its status."""

    lease: BridgeLease
    holder: str | None  # valid now
    active: str | None  # the SparkApplication of the holder's instance
    failovers: int
    last_failover_time: str | None
    lease_holder: str | None
    condition: Condition | None  # ActiveInstance, while an application runs

    @property
    def nobody(self) -> bool:
        """Nobody holds the Lease while an application runs."""
        return self.condition is not None and self.condition.status == "False"

    def ready_conditions(self) -> list[Condition]:
        """Ready (and Stalled or Reconciling) while nobody holds the Lease."""
        assert self.condition is not None
        reason, message = self.condition.reason, self.condition.message
        flag = STALLED if reason == NO_ACTIVE_INSTANCE else RECONCILING
        return [Condition(READY, "False", reason, message), Condition(flag, "True", reason, message)]


def _previous_condition(previous: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in previous.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == ACTIVE_INSTANCE:
            return condition
    return None


def unheld_since(previous: Mapping[str, Any], now: datetime.datetime) -> datetime.datetime:
    """Since when the operator has seen nobody holding the Lease (now, if it just saw it)."""
    old = _previous_condition(previous)
    if old is not None and old.get("status") == "False":
        return parse_time(old.get("lastTransitionTime")) or now
    return now


def _condition(
    lease: BridgeLease,
    holder: str | None,
    active: str | None,
    previous: Mapping[str, Any],
    now: datetime.datetime,
) -> Condition:
    if holder is not None:
        if active is None:
            message = (
                f"{holder} holds Lease {lease.name}, and {instance_of(holder)} is no instance of this "
                "bridge: another process elects itself under this bridge's id; give each bridge its own "
                "spec.bridgeId"
            )
            return Condition(ACTIVE_INSTANCE, "False", AWAITING_LEASE, message)
        since = lease.spec.get("acquireTime") or "an unknown time"
        message = f"{active} is active: {holder} holds Lease {lease.name} since {since}"
        return Condition(ACTIVE_INSTANCE, "True", LEASE_HELD, message)
    waited = now - unheld_since(previous, now)
    limit = lease.duration
    if waited > limit:
        message = (
            f"No instance has held the Lease for more than {limit.total_seconds():g}s while the "
            f"applications run: {lease.why_unheld()}. Check the driver logs of both instances "
            f"(`kubectl logs <application>-driver`), and that their service account may get and update "
            f"Lease {lease.name} in namespace {lease.namespace} (the bridge's own may)"
        )
        return Condition(ACTIVE_INSTANCE, "False", NO_ACTIVE_INSTANCE, message)
    message = f"Waiting for an instance to take the Lease: {lease.why_unheld()}"
    return Condition(ACTIVE_INSTANCE, "False", AWAITING_LEASE, message)


def elect(
    lease: BridgeLease,
    applications: Mapping[str, str],
    running: bool,
    previous: Mapping[str, Any],
    now: datetime.datetime,
) -> Election:
    """The status of a standby pair as its Lease says. `applications` maps instance -> SparkApplication;
    `running`: whether any of them says RUNNING; `previous`: the bridge's status before."""
    holder = lease.holder_at(now)
    active = applications.get(instance_of(holder)) if holder is not None else None
    failovers = int(previous.get("failovers") or 0)
    last_failover = previous.get("lastFailoverTime")
    if lease.body is not None:
        failovers = lease.transitions
        last_failover = lease.spec.get("acquireTime") if failovers else None
    return Election(
        lease=lease,
        holder=holder,
        active=active,
        failovers=failovers,
        last_failover_time=str(last_failover) if last_failover else None,
        lease_holder=lease.named_holder or previous.get("leaseHolder"),
        condition=_condition(lease, holder, active, previous, now) if running or holder else None,
    )


def recheck_at(
    lease: BridgeLease, status: Mapping[str, Any], now: datetime.datetime
) -> datetime.datetime | None:
    """When the status computed at `now` may change with no change of the Lease: the holder's tenure
    expires, or nobody has held it for its duration."""
    condition = _previous_condition(status)
    if lease.holder_at(now) is not None:
        moment = lease.expiry()
    elif condition is not None and condition.get("reason") == AWAITING_LEASE:
        moment = unheld_since(status, now) + lease.duration
    else:
        return None
    return moment + datetime.timedelta(seconds=1) if moment is not None else None


def failover_message(previous: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """`old -> new holder` when the Lease changed hands (or the same holder began a new tenure)."""
    old, new = previous.get("leaseHolder"), current.get("leaseHolder")
    if not old or not new or not current.get("activeInstance"):
        return None
    before, after = int(previous.get("failovers") or 0), int(current.get("failovers") or 0)
    if old == new and after <= before:
        return None
    was = _application_of(current, str(old)) or "?"
    apps = f"{was} -> {current['activeInstance']}"
    return f"Failover: {old} -> {new} ({apps}); failover {after}, at {current.get('lastFailoverTime')}"


def _application_of(status: Mapping[str, Any], holder: str) -> str | None:
    for instance in status.get("instances") or []:
        if isinstance(instance, Mapping) and instance.get("name") == instance_of(holder):
            return str(instance.get("application"))
    return None
