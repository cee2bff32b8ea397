"""The job's generic errors, shared by every stage and adapter."""

from __future__ import annotations

from bridge_job.redaction import redact


class BridgeStopped(Exception):
    """A hard failure: the bridge must stop. The message names what is wrong and what to fix.

    Its text carries a marker by which the driver finds the reason however deep Spark wrapped it. The
    marker is not the driver's `jmsbridge stopped:` line, which Spark's logged task tracebacks would
    otherwise repeat: the job's log has that line once.
    """

    PREFIX = "jmsbridge hard failure: "

    def __init__(self, message: str, condition: str | None = None) -> None:
        reason = redact(message)  # Spark's JVM logs the text of a task's failure, beyond our log handlers
        super().__init__(self.PREFIX + reason)
        self.reason = reason
        # The status reason the operator shows for it, when the driver reports the stop (kube/health.py).
        self.condition = condition


class LeadershipLost(Exception):
    """This instance held the lease and does not any more: it must stop processing at once (kube/leadership.py
    finds it out; whatever writes in the bridge's name raises it too)."""


class CheckpointMismatch(BridgeStopped):
    """A checkpoint taken on other topics than those there now (bridge_job/spark/binding.py)."""
