"""Safe rollouts: which SparkApplications a change of the bridge's spec replaces now, and what status says.

The spark-operator kills and resubmits an application whose spec changes, so replacing both instances of
a bridge at once would stop it for as long as a submission takes. With a standby, a rollout goes one
instance at a time:

1. the standby (every instance but the active one) gets the new spec first;
2. the active instance gets it only once every standby *runs* the new spec; then its restart hands the
   lease to an updated standby, which takes over;
3. the bridge is `Reconciling` (reason `RollingOut`) until every instance runs the new spec, then `Ready`.
4. a standby that does not run the new spec within a deadline of its replacement
   (`naming.ANNOTATION_REPLACED_AT`, `timing.Timing.rollout_deadline_seconds`), or fails with it the same
   way too often, fails the rollout: the bridge is `Stalled` (`RolloutFailed`, status.py) and the active
   instance keeps the previous spec.

"Runs the new spec" needs care: right after our update the application still reports the RUNNING of its
previous submission. So a replacement records the submission the application had
(`naming.ANNOTATION_REPLACED_SUBMISSION`: `submissionID` and `lastSubmissionAttemptTime`), and the
application runs the new spec once it is RUNNING under another submission.

Without a standby the only instance is replaced at once, and status says that the bridge moves no data
until it runs again (reason `RollingOutWithGap`). When no instance runs at all, there is nothing to
protect: every outdated instance is replaced at once. Everything here is pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from jmsbridge_operator import naming
from jmsbridge_operator.condition_catalogue import ROLLING_OUT, ROLLING_OUT_WITH_GAP
from jmsbridge_operator.render import spec_hash_of


@dataclasses.dataclass(frozen=True)
class Progress:
    """What the bridge's Reconciling condition says while a rollout is under way."""

    reason: str
    message: str
    awaiting: tuple[str, ...] = ()  # standbys the active instance's turn waits for
    since: str | None = None  # when the first of them got the new spec (RFC 3339), if known


@dataclasses.dataclass(frozen=True)
class Step:
    replace: tuple[str, ...] = ()  # applications whose spec is replaced in this reconciliation
    progress: Progress | None = None


def submission(app: Mapping[str, Any]) -> str:
    """Which submission of the spark-operator an application is in ("" before its first)."""
    status = app.get("status") or {}
    return f"{status.get('submissionID') or ''}|{status.get('lastSubmissionAttemptTime') or ''}".strip("|")


def _state(app: Mapping[str, Any]) -> str:
    return str(((app.get("status") or {}).get("applicationState") or {}).get("state") or "")


def _annotation(app: Mapping[str, Any] | None, key: str) -> str | None:
    value = (((app or {}).get("metadata") or {}).get("annotations") or {}).get(key)
    return str(value) if value else None


def resubmitted(app: Mapping[str, Any]) -> bool:
    """Whether the application was submitted again since a rollout replaced its spec (or never was)."""
    recorded = ((app.get("metadata") or {}).get("annotations") or {}).get(
        naming.ANNOTATION_REPLACED_SUBMISSION
    )
    return recorded is None or submission(app) != recorded


def runs(app: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> bool:
    """Whether an application runs the spec rendered in `desired`."""
    return (
        app is not None
        and spec_hash_of(dict(app)) == spec_hash_of(dict(desired))
        and resubmitted(app)
        and _state(app) == "RUNNING"
    )


def active_of(existing: Mapping[str, Mapping[str, Any]], previous_active: str | None) -> str | None:
    """The application that moves the data: the one status named, while it runs; else the first running."""
    running = sorted(name for name, app in existing.items() if _state(app) == "RUNNING")
    if previous_active in running:
        return previous_active
    return running[0] if running else None


def _names(names: Sequence[str]) -> str:
    return ", ".join(names)


def step(
    desired: Mapping[str, Mapping[str, Any]],
    existing: Mapping[str, Mapping[str, Any]],
    previous_active: str | None,
) -> Step:
    """The replacements of this reconciliation. `desired` and `existing` map application names to bodies."""
    present = [name for name in sorted(desired) if name in existing]
    outdated = [n for n in present if spec_hash_of(dict(existing[n])) != spec_hash_of(dict(desired[n]))]
    waiting = [n for n in present if n not in outdated and not runs(existing[n], desired[n])]
    if not outdated and not any(not resubmitted(existing[n]) for n in waiting):
        return Step()
    if len(desired) == 1:
        (only,) = desired
        return Step(
            tuple(outdated),
            Progress(
                ROLLING_OUT_WITH_GAP,
                f"Restarting {only} with the new spec: without a standby (spec.failover.standby) the bridge "
                "moves no data until it runs again.",
            ),
        )
    active = active_of(existing, previous_active)
    if active is None or active not in desired:
        if outdated:
            return Step(
                tuple(outdated), Progress(ROLLING_OUT, f"Updating {_names(outdated)}: none is running.")
            )
        return Step((), Progress(ROLLING_OUT, f"Waiting for {_names(waiting)} to run the new spec."))
    standbys = [name for name in sorted(desired) if name != active]
    first = [name for name in standbys if name in outdated]
    if first:
        message = (
            f"Rolling out the new spec: {_names(first)} (standby) first, {active} (active) once "
            f"{'they run' if len(first) > 1 else 'it runs'} it."
        )
        return Step(tuple(first), Progress(ROLLING_OUT, message))
    not_ready = [name for name in standbys if not runs(existing.get(name), desired[name])]
    if active in outdated and not not_ready:
        message = f"Rolling out the new spec: {active} restarts with it; {_names(standbys)} took over."
        return Step((active,), Progress(ROLLING_OUT, message))
    if active in outdated:
        message = (
            f"Rolling out the new spec: waiting for {_names(not_ready)} to run it before {active} (active)."
        )
        replaced = [_annotation(existing.get(name), naming.ANNOTATION_REPLACED_AT) for name in not_ready]
        since = min((t for t in replaced if t), default=None)
        return Step((), Progress(ROLLING_OUT, message, tuple(not_ready), since))
    return Step(
        (), Progress(ROLLING_OUT, f"Rolling out the new spec: waiting for {_names(waiting)} to run it.")
    )
