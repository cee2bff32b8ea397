"""One task of the NATS query: it hosts this process's NATS service for an interval
(nats_service/service.py) and hands back what each route did meanwhile, one row per route.

The service outlives the task: the next interval's task in this process hosts it on, so the subscriptions
never lapse between intervals. When the next task went to another process, this one's service still takes
messages until it drains (its queue group shares them with the new one): what it counted after its last
task is reported by the next task in this process (`_retired`), so each message is counted once.
The task follows route changes while it runs, and fails with the service's hard failure (NATS gone for
longer than the patience, a `fail` policy, ...), which stops the bridge.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, astuple, fields

from bridge_job.nats_service.service import NatsCounts, NatsService
from bridge_job.spark.live import Row as LiveRow
from bridge_job.spark.live import reporting

# One row per route: its counts (NatsCounts, in field order) over the task's interval.
SUMMARY_SCHEMA = ", ".join(
    [
        "route STRING",
        *(f"{f.name} {'BIGINT' if f.type == 'int' else 'ARRAY<BIGINT>'}" for f in fields(NatsCounts)),
        "started_ms BIGINT",
        "ended_ms BIGINT",
    ]
)
POLL_SECONDS = 0.1  # how soon a route change or a failure is seen

_services: dict[str, NatsService] = {}  # per config path: this process's
_retired: dict[str, list[NatsService]] = {}  # per config path: services replaced while they drained
_lock = threading.Lock()

Row = tuple[int | str, ...]


def hosted_service(config_path: str) -> NatsService:
    """This process's service, started when there is none or the last one is draining."""
    with _lock:
        service = _services.get(config_path)
        if service is None or not service.host():
            if service is not None:
                _retired.setdefault(config_path, []).append(service)
            service = _services[config_path] = NatsService(config_path)
            service.host()
        return service


def _with_retired(config_path: str, counts: dict[str, NatsCounts]) -> dict[str, NatsCounts]:
    """`counts` plus what this process's retired services counted since their last task; a retired
    service is forgotten once it closed and was taken."""
    with _lock:
        retired = _retired.get(config_path, [])
        for old in list(retired):
            for route, done in old.unreported().items():
                counts[route] = counts[route].plus(done) if route in counts else done
            if old.closed.is_set():
                retired.remove(old)
    return counts


def run(config_path: str, seconds: float, live: str = "") -> list[Row]:
    """Host the service for `seconds`, telling the driver at `live` what each route did as it goes
    (spark/live.py)."""
    started_ms = int(time.time() * 1000)
    service = hosted_service(config_path)
    deadline = time.monotonic() + seconds

    def so_far() -> dict[str, LiveRow]:
        return {route: {"route": route, **asdict(done)} for route, done in service.unreported(False).items()}

    try:
        with reporting(live, "nats", started_ms, so_far):
            while (left := deadline - time.monotonic()) > 0:
                service.raise_failure()
                service.follow(service.config)
                service.closed.wait(min(POLL_SECONDS, left))
        service.raise_failure()
    finally:
        service.release()
    ended_ms = int(time.time() * 1000)
    done_here = _with_retired(config_path, service.unreported())
    return [(route, *astuple(done), started_ms, ended_ms) for route, done in sorted(done_here.items())]
