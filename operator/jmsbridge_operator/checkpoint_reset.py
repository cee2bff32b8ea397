"""Checkpoint resets and records lost, between the user, the operator and the job.

A job whose checkpoint was taken on other topics stops (`Stalled`, reason `CheckpointMismatch`); the way
forward is the user's to choose, as `jmsbridge reset-checkpoint` is for a local run:

1. the user annotates the bridge: `kubectl annotate jmsbridge NAME jmsbridge.dev/reset-checkpoint=latest`
   (or `earliest`, `committed`: bridge_job/supervision/checkpoints.py says what each replays or skips);
2. the operator takes the request: `status.checkpointReset` gets the position, `state: Requested` and an
   id (the time it took it), and the rendered config carries position and id (`checkpointReset`), which
   restarts the instances (the config is part of their spec);
3. the active instance resets the checkpoint once, records the id in it, and says what it skipped or
   replayed in the health ConfigMap; the operator posts that as an Event (`CheckpointReset`), marks the
   request `Done` and removes the annotation. The config keeps the request: a restart finds the id in the
   checkpoint and resets nothing.

Records lost to retention that a job skipped (`spark.onDataLoss: skip`) are counted in the checkpoint;
the job reports the totals, the operator keeps them in `status.recordsLost` and posts a Warning Event
(`RecordsLost`) for each increase. Everything here is pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from bridge_job.config import CHECKPOINT_POSITIONS, CamelModel, CheckpointPosition, CheckpointReset, JobConfig
from jmsbridge_operator import naming
from jmsbridge_operator.condition_catalogue import INVALID_SPEC
from jmsbridge_operator.conditions import Problem, Transition
from jmsbridge_operator.job_health import LostReport, ResetReport

CHECKPOINT_RESET = "CheckpointReset"
RECORDS_LOST = "RecordsLost"
REQUESTED = "Requested"
DONE = "Done"


class CheckpointResetStatus(CamelModel):
    """The last checkpoint reset asked for with the annotation `jmsbridge.dev/reset-checkpoint`."""

    to: CheckpointPosition
    """The position asked for: earliest, committed or latest."""
    id: str = Field(description="When the operator took the request; the job records it in the checkpoint.")
    state: Literal["Requested", "Done"]
    """Requested until the job did it, then Done."""
    instance: str | None = Field(default=None, description="The instance whose job did the reset.")
    summary: str | None = Field(
        default=None, description="What the reset replayed or skipped, per partition."
    )


@dataclasses.dataclass(frozen=True)
class Decision:
    reset: CheckpointResetStatus | None  # for the status, and (its position and id) for the config
    records_lost: dict[str, int] | None
    notices: tuple[Transition, ...] = ()
    clear_annotation: bool = False  # the request is done: the annotation goes

    def applied(self, config: JobConfig | None) -> JobConfig | None:
        """The job's config with the request: the job does it, once."""
        if config is None or self.reset is None:
            return config
        return config.model_copy(
            update={"checkpoint_reset": CheckpointReset(to=self.reset.to, id=self.reset.id)}
        )


def annotation_problems(body: Mapping[str, Any]) -> tuple[Problem, ...]:
    """An annotation asking for a position that does not exist."""
    value = annotation(body)
    if value is None or value in CHECKPOINT_POSITIONS:
        return ()
    subject = f"metadata.annotations[{naming.ANNOTATION_RESET_CHECKPOINT}]"
    positions = ", ".join(CHECKPOINT_POSITIONS)
    message = f"{subject}: {value!r} is no position to reset the checkpoint to; use one of {positions}"
    return (Problem(INVALID_SPEC, subject, message),)


def annotation(body: Mapping[str, Any]) -> str | None:
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(naming.ANNOTATION_RESET_CHECKPOINT)
    return None if value is None else str(value).strip()


def _previous(status: Mapping[str, Any]) -> CheckpointResetStatus | None:
    try:
        return CheckpointResetStatus.model_validate(status["checkpointReset"])
    except (KeyError, ValueError):
        return None


def decide(
    body: Mapping[str, Any],
    previous_status: Mapping[str, Any] | None,
    resets: Sequence[ResetReport],
    losses: Sequence[LostReport],
    now: str,
) -> Decision:
    """The reset request and the records lost that the status says, and the Events to post."""
    previous = previous_status or {}
    reset = _previous(previous)
    asked = annotation(body)
    notices: list[Transition] = []
    clear = False
    if asked in CHECKPOINT_POSITIONS and (reset is None or reset.state == DONE or reset.to != asked):
        position: CheckpointPosition = asked
        reset = CheckpointResetStatus(to=position, id=now, state=REQUESTED)
        notices.append(
            Transition("Normal", CHECKPOINT_RESET, f"Checkpoint reset to {position} requested (id {now})")
        )
    elif reset is not None and reset.state == REQUESTED:
        done = next((r for r in resets if r.id == reset.id), None)
        if done is not None:
            reset = reset.model_copy(
                update={"state": DONE, "instance": done.instance, "summary": done.summary}
            )
            message = f"Checkpoint reset to {reset.to} by instance {done.instance}: {done.summary}"
            notices.append(Transition("Normal", CHECKPOINT_RESET, message))
            clear = asked is not None

    lost = dict(previous.get("recordsLost") or {})
    for topic in sorted({t for report in losses for t in report.totals}):
        total = max(report.totals.get(topic, 0) for report in losses)
        more = total - int(lost.get(topic, 0))
        if more > 0:
            lost[topic] = total
            message = (
                f"{more} records of topic {topic} left it (retention) before the bridge read them and were "
                f"skipped (spark.onDataLoss: skip); {total} in all since the checkpoint began"
            )
            notices.append(Transition("Warning", RECORDS_LOST, message))
    return Decision(reset, {str(t): int(n) for t, n in lost.items()} or None, tuple(notices), clear)
