"""The driver's loop restarts a query whose Python worker was slow to start, a few times, and no other.

Spark gives a Python worker 10 s to connect back, and a busy node can miss that: the query dies at start.
That failure cannot be produced at will here, so the queries are stand-ins with StreamingQuery's surface
(isActive, exception, lastProgress); the rest of the loop is the job's own.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from bridge_job.config.rendered import RenderedConfig
from bridge_job.faults.stops import BridgeStopped
from bridge_job.supervision.driver import MAX_WORKER_RESTARTS, WORKER_START_FAILURE, Supervision
from bridge_job.supervision.flows import EGRESS, FLOWS, Flow
from bridge_job.supervision.telemetry import Metrics
from testbed.builders import config


class Query:
    """A query that fails at once with `failure`, or runs until `stopping` is set."""

    def __init__(self, failure: str | None, stopping: threading.Event) -> None:
        self.failure = failure
        self.stopping = stopping
        self.lastProgress = None

    @property
    def isActive(self) -> bool:
        return self.failure is None and not self.stopping.is_set()

    def exception(self) -> Exception | None:
        return None if self.failure is None else Exception(self.failure)


def supervise(tmp_path: Path, failures: list[str | None]) -> tuple[Supervision, list[Query]]:
    """A supervision whose egress query fails with each of `failures` in turn (None: runs until stopped)."""
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(config().dump()))
    stopping = threading.Event()
    started: list[Query] = []

    def start(flow: Flow, current: object) -> Query:
        assert flow is EGRESS, "no kafkaToJms or NATS route: no other query"
        failure = failures[len(started)]
        started.append(Query(failure, stopping))
        if failure is None:
            stopping.set()  # the restarted query runs: stop the loop as a SIGTERM would
        return started[-1]

    ingest: Any = SimpleNamespace(failure=None)
    supervision = Supervision(
        [],
        ingest,
        None,
        RenderedConfig([path], tmp_path),
        stopping,
        Metrics("orders"),
        FLOWS,
        start,
    )
    return supervision, started


def test_a_query_whose_worker_was_slow_to_start_is_started_again(tmp_path: Path) -> None:
    supervision, started = supervise(tmp_path, [f"[STREAM_FAILED] {WORKER_START_FAILURE}.", None])
    assert supervision.run() == 0
    assert len(started) == 2 and supervision.worker_restarts == 1


def test_it_gives_up_after_a_few_times(tmp_path: Path) -> None:
    failures: list[str | None] = [WORKER_START_FAILURE] * (MAX_WORKER_RESTARTS + 1)
    supervision, started = supervise(tmp_path, failures)
    with pytest.raises(BridgeStopped, match=WORKER_START_FAILURE):
        supervision.run()
    assert len(started) == MAX_WORKER_RESTARTS + 1


def test_any_other_failure_stops_the_bridge_at_once(tmp_path: Path) -> None:
    supervision, started = supervise(tmp_path, ["jmsbridge hard failure: topic orders does not exist"])
    with pytest.raises(BridgeStopped, match="topic orders does not exist"):
        supervision.run()
    assert len(started) == 1


def test_a_tasks_hard_failure_reaches_the_driver_with_its_status_reason(tmp_path: Path) -> None:
    """A task's BridgeStopped crosses Spark as text only (a Python traceback inside a Java one); the driver
    finds its reason and its status reason in it, which the job reports (`stops_reported`)."""
    refused = BridgeStopped(
        "the JMS broker refused the bridge's login: bad password", "JmsAuthenticationFailed"
    )
    spark = (
        "[STREAM_FAILED] Query [id = 1] terminated with exception: Job aborted due to stage failure: "
        "Task 0 in stage 3.0 failed 1 times\norg.apache.spark.api.python.PythonException: Traceback "
        f'(most recent call last):\n  File "task.py", line 9, in run\nbridge_job.faults.stops.BridgeStopped: '
        f"{refused}\n\tat org.apache.spark.api.python.BasePythonRunner"
    )
    supervision, _ = supervise(tmp_path, [spark])
    with pytest.raises(BridgeStopped) as stopped:
        supervision.run()
    assert stopped.value.condition == "JmsAuthenticationFailed"
    assert stopped.value.reason == "the JMS broker refused the bridge's login: bad password"


def test_a_hard_failure_without_a_status_reason_keeps_its_old_text() -> None:
    assert (
        str(BridgeStopped("topic orders does not exist"))
        == "jmsbridge hard failure: topic orders does not exist"
    )
    found = BridgeStopped.found_in("x\n  jmsbridge hard failure: topic orders does not exist\ny")
    assert found is not None and (found.reason, found.condition) == ("topic orders does not exist", None)
