"""Each NATS message counted once, whichever task reports it: a service replaced while it drained hands
what it counted after its last task to the next task of its process."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import cast

from bridge_job.nats_service import interval
from bridge_job.nats_service.service import NatsCounts, NatsService


def test_plus_undoes_since() -> None:
    earlier = NatsCounts(received=2, loops=1, max_round_trip_ms=7, round_trip_buckets=[1] * 12)
    later = replace(earlier, received=5, loops=3, max_round_trip_ms=9, round_trip_buckets=[2] * 12)
    assert earlier.plus(later.since(earlier)) == later


class _Draining:
    """A retired service: what it counted since its last task, and whether it closed."""

    def __init__(self, counts: dict[str, NatsCounts], closed: bool) -> None:
        self._counts, self.closed = counts, threading.Event()
        if closed:
            self.closed.set()

    def unreported(self) -> dict[str, NatsCounts]:
        counts, self._counts = self._counts, {}
        return counts


def test_what_a_retired_service_counted_goes_with_the_next_row_of_its_process() -> None:
    draining = _Draining({"nloop-in": NatsCounts(received=1, loops=1)}, closed=False)
    interval._retired["cfg"] = [cast(NatsService, draining)]
    try:
        here = NatsCounts(received=1, forwarded=1)
        rows = interval._with_retired("cfg", {"nin": here})
        assert rows == {"nin": here, "nloop-in": NatsCounts(received=1, loops=1)}
        assert interval._with_retired("cfg", {}) == {}  # taken once; still draining, so kept
        draining.closed.set()
        assert interval._with_retired("cfg", {}) == {}
        assert interval._retired["cfg"] == []  # closed and taken: forgotten
    finally:
        interval._retired.pop("cfg", None)
