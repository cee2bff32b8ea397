"""The job's generic errors, shared by every stage and adapter."""

from __future__ import annotations

import re

from bridge_job.redaction import redact

# `jmsbridge hard failure: ` or, naming a status reason, `jmsbridge hard failure [JmsTlsFailed]: `.
_MARKER = re.compile(r"jmsbridge hard failure(?: \[([A-Za-z]+)\])?: ")


class BridgeStopped(Exception):
    """A hard failure: the bridge must stop. The message names what is wrong and what to fix.

    Its text carries a marker by which the driver finds the reason, and the status reason when there is
    one, however deep Spark wrapped it (`found_in`: a task's failure reaches the driver as text). The
    marker is not the driver's `jmsbridge stopped:` line, which Spark's logged task tracebacks would
    otherwise repeat: the job's log has that line once.
    """

    PREFIX = "jmsbridge hard failure: "

    def __init__(self, message: str, condition: str | None = None) -> None:
        reason = redact(message)  # Spark's JVM logs the text of a task's failure, beyond our log handlers
        marker = self.PREFIX if condition is None else f"jmsbridge hard failure [{condition}]: "
        super().__init__(marker + reason)
        self.reason = reason
        # The status reason the operator shows for it, when the driver reports the stop (kube/health.py).
        self.condition = condition

    @classmethod
    def found_in(cls, text: str) -> BridgeStopped | None:
        """The hard failure whose text `text` carries (its first line that does), status reason included."""
        for line in text.splitlines():
            if (found := _MARKER.search(line)) is not None:
                return cls(line[found.end() :].strip(), found.group(1))
        return None


class LeadershipLost(Exception):
    """This instance held the lease and does not any more: it must stop processing at once (kube/leadership.py
    finds it out; whatever writes in the bridge's name raises it too, and so does a query's planning that
    finds its tenure over: spark/gate.py).

    Like a hard failure's, its text carries a marker by which the driver tells it, through Spark's
    wrapping, from a failure: a fenced end exits 3 (restart as the standby), not 2."""

    PREFIX = "jmsbridge lease lost: "

    def __init__(self, reason: str) -> None:
        super().__init__(self.PREFIX + reason)
        self.reason = reason

    @classmethod
    def found_in(cls, text: str) -> LeadershipLost | None:
        """The lost lease whose text `text` carries (its first line that does)."""
        for line in text.splitlines():
            if (at := line.find(cls.PREFIX)) >= 0:
                return cls(line[at + len(cls.PREFIX) :].strip())
        return None


class CheckpointMismatch(BridgeStopped):
    """A checkpoint taken on other topics than those there now (bridge_job/spark/binding.py)."""
