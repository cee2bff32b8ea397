"""The driver's loop while the bridge runs: the lease, ingest failures, route changes, progress reports."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bridge_job.config import ConfigError, JobConfig
from bridge_job.config.rendered import RenderedConfig
from bridge_job.faults.stops import BridgeStopped, LeadershipLost
from bridge_job.kafka.waiting import asking
from bridge_job.kube.leadership import Leadership
from bridge_job.supervision.stopping import stopped_by, stopped_with_us
from bridge_job.supervision.topics import check_topics, ensure_pending_topic

if TYPE_CHECKING:
    from bridge_job.ingest.journalling import DriverIngest
    from bridge_job.spark.gate import Gate
    from bridge_job.supervision.flows import Flow
    from bridge_job.supervision.telemetry import Metrics

log = logging.getLogger("jmsbridge.job")

# The lease, an ingest failure, a route change: the job's own state, cheap to look at often.
POLL_SECONDS = 0.25
# The queries' state and progress reports: each read is a py4j call and, for a report, JSON made in the
# JVM; four a second per query were a third of an idle job's CPU. A report missed meanwhile is read
# with the next (`BatchReports`), a query that ended is seen within this.
SPARK_POLL_SECONDS = 1.0
WORKER_START_FAILURE = "Python worker failed to connect back"
MAX_WORKER_RESTARTS = 3


@dataclass
class Supervision:
    """The driver's loop while the bridge runs: the lease, ingest failures, route changes."""

    queries: list[Any]  # a StreamingQuery per flow, each started once its routes ask for it (`flows`)
    ingest: DriverIngest
    leadership: Leadership | None
    rendered: RenderedConfig
    stopping: threading.Event
    metrics: Metrics
    all_flows: Sequence[Flow]  # supervision/flows.py
    start: Callable[[Flow, JobConfig], Any]  # a flow's query, for the config as it is now
    after_batch: Callable[[], None] = lambda: None  # records lost to retention, counted by the planning
    available_now: bool = False  # only the flows that drain run
    reports: list[Any] = field(default_factory=list)  # each query's progress reports (spark/progress.py)
    flows: list[Flow] = field(default_factory=list)  # of each query, in `queries` order
    worker_restarts: int = 0

    def run(self) -> int:
        """0 once stopped; BridgeStopped for a hard failure, LeadershipLost when the lease went."""
        self.start_queries()
        try:
            spark_due = 0.0
            while not self.stopping.is_set():
                if time.monotonic() >= spark_due:
                    spark_due = time.monotonic() + SPARK_POLL_SECONDS
                    if not self._queries_run():
                        break
                self.stopping.wait(POLL_SECONDS)
                self._check_lease()
                if self.ingest.failure is not None:
                    raise self.ingest.failure
                self._reload_routes()
            self._check_lease()  # a query stopped because the lease was lost: no failure of its own
            if self.stopping.is_set():
                # Asked to stop: the signal reaches Spark's JVM too (a process group, a pod's stop), and
                # a query it took down is no failure. Logging one would make a clean stop exit 2.
                return 0
            self._raise_failure()
            for query in self.queries:  # availableNow: one query is done, the other drains too
                query.awaitTermination()
            self._raise_failure()
            return 0
        except (BridgeStopped, LeadershipLost):
            raise
        except Exception as error:
            log.debug("stopping on", exc_info=True)
            if self.stopping.is_set():  # asked to stop, and Spark's JVM got the signal too
                log.info("stopping: %s", stopped_with_us(error))
                return 0
            self._check_lease()
            stopped = stopped_by(error)
            if not any(kind.found_in(str(error)) for kind in (BridgeStopped, LeadershipLost)):
                log.exception("unexpected failure")
            raise stopped from None

    def _queries_run(self) -> bool:
        """Whether every query runs (one whose worker was slow to start is started again); their new
        progress reports recorded."""
        active = [q.isActive for q in self.queries]
        self.metrics.record_queries([f.name for f in self.flows], active)
        if not all(active) and not self._restart_after_worker_start():
            return False
        for reports, flow in zip(self.reports, self.flows, strict=True):
            for progress in reports.new():
                self._record(flow, progress)
        return True

    def start_queries(self) -> None:
        """The queries the routes ask for now, each once (a warm standby starts them before it holds the
        lease, held until then: spark/gate.py)."""
        self._start_for(self.rendered.config)

    def replace_ended(self) -> None:
        """Start again each query that ended while it was held at the gate: it never planned or ran."""
        for index, query in enumerate(self.queries):
            if not query.isActive:
                log.warning("the %s query ended while held: %s", self.flows[index].name, query.exception())
                self._restart(index)

    def _restart(self, index: int) -> None:
        from bridge_job.spark.progress import BatchReports

        restarted = self.start(self.flows[index], self.rendered.config)
        self.queries[index] = restarted
        self.reports[index] = BatchReports(restarted)

    def _start_for(self, config: JobConfig) -> None:
        """Each flow's query not running yet that `config`'s routes ask for: a bridge without a
        kafkaToJms route runs no ingress query, one without NATS routes no NATS query."""
        from bridge_job.spark.progress import BatchReports

        for flow in self.all_flows:
            if flow in self.flows or not flow.wanted(config) or (self.available_now and not flow.drains):
                continue
            query = self.start(flow, config)
            self.queries.append(query)
            self.flows.append(flow)
            self.reports.append(BatchReports(query))

    def _restart_after_worker_start(self) -> bool:
        """Start again a query that died because Spark's Python worker was slow to start (Spark gives it
        10 s, which a busy node can miss): from its checkpoint, so nothing is lost; a few times at most."""
        for index, query in enumerate(self.queries):
            failure = None if query.isActive else query.exception()
            if failure is None or WORKER_START_FAILURE not in str(failure):
                continue
            if self.worker_restarts >= MAX_WORKER_RESTARTS:
                return False
            self.worker_restarts += 1
            log.warning(
                "%s; starting the query again (%d of %d)",
                WORKER_START_FAILURE,
                self.worker_restarts,
                MAX_WORKER_RESTARTS,
            )
            self._restart(index)
            return True
        return False

    def _raise_failure(self) -> None:
        for query in self.queries:
            exception = query.exception()
            if exception is not None:
                raise stopped_by(exception)

    def _record(self, flow: Flow, progress: Any) -> None:
        try:
            self.metrics.record(flow.name, progress)
            self.after_batch()
        except Exception:  # telemetry must never stop the bridge
            log.warning(
                "cannot record the figures of %s batch %s", flow.name, progress.batchId, exc_info=True
            )

    def _check_lease(self) -> None:
        if self.leadership is not None:
            self.leadership.check()

    def _reload_routes(self) -> None:
        try:
            changed = self.rendered.reload()
        except ConfigError as error:
            log.error("config change rejected, keeping the routes in effect:\n%s", error)
            return
        if changed is not None:
            asking(changed, "checking the topics of the changed routes", lambda: check_topics(changed))
            asking(changed, "checking the pending-request topic", lambda: ensure_pending_topic(changed))
            log.info("routes reloaded: %s", ", ".join(r.name for r in changed.routes) or "none")
            self._start_for(changed)


def halt(ingest: DriverIngest, queries: list[Any], gate: Gate) -> None:
    """On losing the lease: stop taking messages and writing at once, and planning (the gate shut),
    another instance takes over."""
    ingest.stop_event.set()
    gate.shut()
    for query in queries:
        if query.isActive:
            query.stop()
