"""Failure semantics: whether the spark-operator restarts a failed application, and when to stop waiting.

A bridge's SparkApplications run under `restartPolicy: Always` (render.RESTART_POLICY): the spark-operator
resubmits a FAILED or SUBMISSION_FAILED application after a short interval, for ever. A failure it will
retry is therefore not yet a reason to call a person: the bridge is `Reconciling` (reason
`ApplicationRestarting`), and `Stalled` only when

- the application's own restart policy gives up (`Never`; `OnFailure` past `onFailureRetries` or
  `onSubmissionFailureRetries`, both read from the live object, as the spark-operator reads them), or
- the same failure (same error message) comes back `FAILURE_THRESHOLD` times in a row, each within
  `FAILURE_WINDOW_SECONDS` of the one before: a crash loop that restarting does not cure. A failure after a
  longer quiet spell starts a new count, so a weekly transient failure never adds up.

A failure is counted once: a new one is one with other attempt counters than the last counted one (the
spark-operator increments `executionAttempts` or `submissionAttempts` on every try), or, where it reports
none, one seen after another state. Everything here is pure.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from bridge_job.config import CamelModel

FAILURE_THRESHOLD = 3
FAILURE_WINDOW_SECONDS = 600

SUBMISSION_FAILED = "SUBMISSION_FAILED"
# States the spark-operator acts on per restart policy; FAILING and SUCCEEDING become FAILED or COMPLETED.
RETRIED_ON_FAILURE = frozenset({"FAILED", "FAILING", SUBMISSION_FAILED})


class LastFailure(CamelModel):
    """The failure being counted: what it said, when it was seen, at which attempt."""

    message: str = ""
    """What the failure said (the spark-operator's error or the job's stop line)."""
    time: str = Field(description="RFC 3339 time the operator saw it.")
    attempt: int = Field(default=0, description="executionAttempts + submissionAttempts at the time.")


@dataclasses.dataclass(frozen=True)
class Attempts:
    """The spark-operator's counters and start time of one application (its own `Attempts` and `Start`)."""

    execution: int = 0
    submission: int = 0
    start_time: str | None = None

    @classmethod
    def observe(cls, status: Mapping[str, Any]) -> Attempts:
        return cls(
            int(status.get("executionAttempts") or 0),
            int(status.get("submissionAttempts") or 0),
            status.get("lastSubmissionAttemptTime") or None,
        )

    @property
    def total(self) -> int:
        return self.execution + self.submission


def will_retry(policy: Mapping[str, Any] | None, state: str, attempts: Attempts) -> bool:
    """Whether the spark-operator will resubmit an application in `state` (its `shouldRetry`)."""
    kind = (policy or {}).get("type") or "Never"
    if kind == "Always":
        return True
    if kind != "OnFailure" or state not in RETRIED_ON_FAILURE:
        return False
    if state == SUBMISSION_FAILED:
        limit, used = (policy or {}).get("onSubmissionFailureRetries"), attempts.submission
    else:
        limit, used = (policy or {}).get("onFailureRetries"), attempts.execution
    return limit is not None and used <= int(limit)


def seconds_between(earlier: str, later: str) -> float:
    def parse(text: str) -> datetime.datetime:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))

    try:
        return (parse(later) - parse(earlier)).total_seconds()
    except ValueError:
        return float("inf")  # an unreadable time starts a new count


def counted(
    previous: LastFailure | None,
    previous_failures: int,
    was_failed: bool,
    message: str,
    attempts: Attempts,
    now: str,
    window: float = FAILURE_WINDOW_SECONDS,
) -> tuple[LastFailure, int]:
    """The failure streak after seeing a failed application: (the failure counted last, how often)."""
    seen = previous is not None and previous.attempt == attempts.total and (attempts.total > 0 or was_failed)
    if seen and previous is not None:
        return previous, previous_failures  # the failure already counted, seen again
    latest = LastFailure(message=message, time=now, attempt=attempts.total)
    repeated = (
        previous is not None and previous.message == message and seconds_between(previous.time, now) <= window
    )
    return latest, (previous_failures + 1 if repeated else 1)


def recovered(last: LastFailure, now: str, window: float = FAILURE_WINDOW_SECONDS) -> bool:
    """Whether a running instance's last failure is old enough to forget: a next one would start a new
    count anyway. (A failure record on an instance that runs again tells nobody anything.)"""
    return seconds_between(last.time, now) > window
