"""What the running job says of its brokers, as conditions: the ConfigMap `<bridgeId>-jms-bridge-health`.

The job's active instance writes the state of its JMS broker and of Kafka there under its instance name
(`bridge_job/kube/health.py`): `Reconnecting` while it waits out an outage (bridge_job/faults/outages.py),
`Connected` once the system answers again. A SparkApplication says RUNNING all the while, so this is the
only way the status can tell that nothing moves:

- `JmsConnected` / `KafkaConnected` True (`Connected`) when the reporting instances are connected;
- False (`Reconnecting`) while one of them waits the system out, with since when, the patience after
  which the job stops (`spec.outages.patienceSeconds`) and the job's (redacted) error; the bridge is then
  not Ready, and Reconciling with the same reason: it comes back by itself, or stops once the patience ends.

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

# CONNECTED and RECONNECTING are the states the job writes, and the reasons as they are.
from bridge_job.config import HealthKey
from jmsbridge_operator.condition_catalogue import (
    CONNECTED,
    JMS_CONNECTED,
    JMS_RECONNECTING,
    KAFKA_CONNECTED,
    KAFKA_RECONNECTING,
    NATS_CONNECTED,
    NATS_RECONNECTING,
    RECONNECTING,
    SCHEMA_REGISTRY_CONNECTED,
    SCHEMA_REGISTRY_RECONNECTING,
)
from jmsbridge_operator.conditions import Condition


@dataclasses.dataclass(frozen=True)
class System:
    """A system the job reports on: its section in the report, its condition and its words."""

    section: str
    condition: str
    reason: str  # Ready's and Reconciling's reason while it is unreachable
    name: str


SYSTEMS = (
    System(HealthKey.JMS, JMS_CONNECTED, JMS_RECONNECTING, "JMS broker"),
    System(HealthKey.KAFKA, KAFKA_CONNECTED, KAFKA_RECONNECTING, "Kafka cluster"),
    System(HealthKey.NATS, NATS_CONNECTED, NATS_RECONNECTING, "NATS servers"),
    System(HealthKey.REGISTRY, SCHEMA_REGISTRY_CONNECTED, SCHEMA_REGISTRY_RECONNECTING, "schema registry"),
)
RECONNECTING_REASONS = tuple(system.reason for system in SYSTEMS)


@dataclasses.dataclass(frozen=True)
class ConnectionReport:
    instance: str
    state: str
    since: str | None = None
    error: str | None = None
    patience_seconds: int | None = None
    section: str = HealthKey.JMS


def connection_reports(data: Mapping[str, Any] | None) -> list[ConnectionReport]:
    """The instances' reports on every system in the ConfigMap's data; unreadable entries are left out."""
    reports = []
    for system in SYSTEMS:
        for instance, report in _sections(data, system.section):
            try:
                state = str(report[HealthKey.STATE])
            except (TypeError, KeyError):
                continue
            patience = report.get(HealthKey.PATIENCE)
            reports.append(
                ConnectionReport(
                    instance,
                    state,
                    report.get(HealthKey.SINCE),
                    report.get(HealthKey.ERROR),
                    int(patience) if isinstance(patience, int) else None,
                    system.section,
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
    for instance, stopped in _sections(data, HealthKey.STOPPED):
        try:
            reason, message = str(stopped[HealthKey.REASON]), str(stopped[HealthKey.MESSAGE])
            reports.append(StopReport(instance, reason, message))
        except (TypeError, KeyError):
            continue
    return reports


def connection_conditions(reports: list[ConnectionReport], running: Collection[str]) -> list[Condition]:
    """`JmsConnected` and `KafkaConnected` from the reports of the instances in `running`; a system
    without any report gets no condition."""
    conditions = []
    for system in SYSTEMS:
        current = [r for r in reports if r.section == system.section and r.instance in running]
        if not current:
            continue
        failing = [r for r in current if r.state == RECONNECTING]
        if not failing:
            message = f"the job is connected to its {system.name}"
            conditions.append(Condition(system.condition, "True", CONNECTED, message))
            continue
        report = failing[0]
        patience = (
            f" (it stops after spec.outages.patienceSeconds={report.patience_seconds})"
            if report.patience_seconds
            else ""
        )
        message = (
            f"instance {report.instance} lost its {system.name} at {report.since or 'an unknown time'} "
            f"and is reconnecting{patience}: {report.error or 'no error reported'}; check the "
            f"{system.name} and the network between them"
        )
        conditions.append(Condition(system.condition, "False", RECONNECTING, message))
    return conditions


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
    for instance, done in _sections(data, HealthKey.CHECKPOINT_RESET):
        try:
            found = (
                str(done[HealthKey.RESET_ID]),
                str(done[HealthKey.RESET_TO]),
                str(done[HealthKey.RESET_SUMMARY]),
            )
            reports.append(ResetReport(instance, *found))
        except (TypeError, KeyError):
            continue
    return reports


def lost_reports(data: Mapping[str, Any] | None) -> list[LostReport]:
    reports = []
    for instance, totals in _sections(data, HealthKey.RECORDS_LOST):
        if isinstance(totals, dict):
            reports.append(
                LostReport(instance, {str(t): int(n) for t, n in totals.items() if isinstance(n, int)})
            )
    return reports
