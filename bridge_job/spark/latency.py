"""Latency buckets: how a task counts its messages' latencies into its summary row, for a histogram.

A task's row reaches the driver once per batch or interval, so per-message latencies travel as counts:
one per bucket of `BOUNDS` (seconds, upper bounds, each inclusive) and one past the last, beside their sum.
The driver adds them up into a Prometheus histogram (supervision/telemetry.py). The bounds span what the
bridge sees: a few milliseconds in real-time mode, seconds in micro-batch mode, a minute in an outage.
"""

from __future__ import annotations

import bisect

BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_BOUNDS_MS = tuple(round(bound * 1000) for bound in BOUNDS)


def no_latencies() -> list[int]:
    """The counts of a row that saw no message: one per bound and one for +Inf."""
    return [0] * (len(BOUNDS) + 1)


def count_latency(buckets: list[int], latency_ms: int) -> None:
    """One message that took `latency_ms`, counted in the first bucket whose bound it does not exceed."""
    buckets[bisect.bisect_left(_BOUNDS_MS, latency_ms)] += 1


def added(ours: list[int] | None, theirs: list[int] | None) -> list[int]:
    """Two rows' counts together (a real-time interval's ranges; a missing list counts nothing)."""
    total = no_latencies()
    for counts in (ours, theirs):
        for index, count in enumerate(counts or ()):
            total[index] += int(count or 0)
    return total
