"""What the running job says of its JMS broker, as a condition: the ConfigMap `<bridgeId>-jms-bridge-health`.

The job's active instance writes its JMS state there under its instance name (`bridge_job/kube/health.py`):
`Reconnecting` while the ingest retries a broker it lost, `Connected` once it is back. A SparkApplication
says RUNNING all the while, so this is the only way the status can tell that nothing moves:

- `JmsConnected` True (`Connected`) when the reporting instances are connected;
- `JmsConnected` False (`Reconnecting`) while one of them reconnects, with since when, the window after
  which the job stops (`jms.reconnect.windowSeconds`) and the job's (redacted) error; the bridge is then
  not Ready, and Reconciling with the same reason: it comes back by itself, or stops once the window ends.

Only instances whose application is RUNNING count: a report left by an instance that stopped says nothing
about the bridge now. A bridge whose job never reported (an older job, a local run) gets no condition.
Beside them, a checkpoint reset done and records lost (read by checkpoint_reset.py). Everything here is
pure.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Mapping
from typing import Any

from bridge_job.config import JMS_CONNECTED as CONNECTED  # the states the job writes
from bridge_job.config import JMS_RECONNECTING as RECONNECTING
from jmsbridge_operator.conditions import Condition

JMS_CONNECTED = "JmsConnected"


@dataclasses.dataclass(frozen=True)
class JmsReport:
    instance: str
    state: str
    since: str | None = None
    error: str | None = None
    window_seconds: int | None = None


def jms_reports(data: Mapping[str, Any] | None) -> list[JmsReport]:
    """The instances' reports in the ConfigMap's data; unreadable entries are left out."""
    reports = []
    for instance, jms in _sections(data, "jms"):
        try:
            state = str(jms["state"])
        except (TypeError, KeyError):
            continue
        window = jms.get("windowSeconds")
        reports.append(
            JmsReport(
                instance,
                state,
                jms.get("since"),
                jms.get("error"),
                int(window) if isinstance(window, int) else None,
            )
        )
    return reports


@dataclasses.dataclass(frozen=True)
class StopReport:
    """Why an instance's job stopped, when it said so before exiting (a checkpoint mismatch)."""

    instance: str
    reason: str
    message: str


def stop_reports(data: Mapping[str, Any] | None) -> list[StopReport]:
    """The instances' stop reports in the ConfigMap's data; a running job's JMS state replaces its own."""
    reports = []
    for instance, stopped in _sections(data, "stopped"):
        try:
            reports.append(StopReport(instance, str(stopped["reason"]), str(stopped["message"])))
        except (TypeError, KeyError):
            continue
    return reports


def jms_condition(reports: list[JmsReport], running: Collection[str]) -> Condition | None:
    """The `JmsConnected` condition from the reports of the instances in `running`; None without any."""
    current = [r for r in reports if r.instance in running]
    if not current:
        return None
    failing = [r for r in current if r.state == RECONNECTING]
    if not failing:
        return Condition(JMS_CONNECTED, "True", CONNECTED, "the job is connected to its JMS broker")
    report = failing[0]
    window = (
        f" (it stops after jms.reconnect.windowSeconds={report.window_seconds})"
        if report.window_seconds
        else ""
    )
    message = (
        f"instance {report.instance} lost its JMS broker at {report.since or 'an unknown time'} and is "
        f"reconnecting{window}: {report.error or 'no error reported'}; check the broker and the network "
        "between them"
    )
    return Condition(JMS_CONNECTED, "False", RECONNECTING, message)


@dataclasses.dataclass(frozen=True)
class ResetReport:
    """A checkpoint reset the operator asked for, done by an instance's job (checkpoint_reset.py)."""

    instance: str
    id: str
    to: str
    summary: str


@dataclasses.dataclass(frozen=True)
class LostReport:
    """Records lost to retention that an instance's job skipped, per topic, since the checkpoint began."""

    instance: str
    totals: Mapping[str, int]


def _sections(data: Mapping[str, Any] | None, section: str) -> list[tuple[str, Any]]:
    found = []
    for instance, text in sorted((data or {}).items()):
        try:
            found.append((instance, json.loads(text)[section]))
        except (TypeError, ValueError, KeyError):
            continue
    return found


def reset_reports(data: Mapping[str, Any] | None) -> list[ResetReport]:
    reports = []
    for instance, done in _sections(data, "checkpointReset"):
        try:
            reports.append(ResetReport(instance, str(done["id"]), str(done["to"]), str(done["summary"])))
        except (TypeError, KeyError):
            continue
    return reports


def lost_reports(data: Mapping[str, Any] | None) -> list[LostReport]:
    reports = []
    for instance, totals in _sections(data, "recordsLost"):
        if isinstance(totals, dict):
            reports.append(
                LostReport(instance, {str(t): int(n) for t, n in totals.items() if isinstance(n, int)})
            )
    return reports
