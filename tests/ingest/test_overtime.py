"""An ingest task past its interval's end: on while an outage is under way, or while batches it journalled
but could not commit on JMS are still to come back (for at most one more interval)."""

from __future__ import annotations

import threading
import time

from bridge_job.ingest.health import TaskHealth
from bridge_job.ingest.interval import _overtime


class Part:
    def __init__(self, uncommitted: bool = False) -> None:
        self.failure: BaseException | None = None
        self.stop_event = threading.Event()
        self.uncommitted = uncommitted

    def has_uncommitted(self) -> bool:
        return self.uncommitted


def test_nothing_under_way_ends_the_task_at_the_interval_end() -> None:
    started = time.monotonic()
    _overtime(Part(), (TaskHealth(), TaskHealth()), seconds=60)
    assert time.monotonic() - started < 5


def test_an_outage_under_way_keeps_the_task_on_until_it_ends() -> None:
    jms = TaskHealth()
    jms.failing("JMS source orders", "connection refused")
    ended = threading.Event()

    def task_end() -> None:
        _overtime(Part(), (jms, TaskHealth()), 0.01)
        ended.set()

    waiting = threading.Thread(target=task_end)
    waiting.start()
    assert not ended.wait(0.5)  # well past the interval's 0.01 s: still on
    jms.back("JMS source orders")
    assert ended.wait(10)
    waiting.join()


def test_an_outage_that_stops_the_partition_ends_the_task() -> None:
    kafka, part = TaskHealth(), Part()
    kafka.failing("journalling orders", "all brokers down")
    threading.Timer(0.2, lambda: setattr(part, "failure", RuntimeError("past the patience"))).start()
    _overtime(part, (TaskHealth(), kafka), 0.01)
    assert part.failure is not None


def test_uncommitted_batches_keep_the_task_on_for_at_most_one_more_interval() -> None:
    part = Part(uncommitted=True)
    started = time.monotonic()
    _overtime(part, (TaskHealth(), TaskHealth()), seconds=0.5)
    assert time.monotonic() - started >= 0.5
