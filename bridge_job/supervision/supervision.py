"""The driver's loop while the bridge runs: the lease, ingest failures, route changes, progress reports."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bridge_job.config import ConfigError, Direction, JobConfig
from bridge_job.config.rendered import RenderedConfig
from bridge_job.errors import BridgeStopped
from bridge_job.kafka.waiting import asking
from bridge_job.kube.leadership import Leadership, LeadershipLost
from bridge_job.supervision.stopping import stop_reason, stopped_with_us
from bridge_job.supervision.topics import check_topics, ensure_pending_topic

if TYPE_CHECKING:
    from bridge_job.jms_to_journal.ingest import Ingest
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

    queries: list[Any]  # the egress StreamingQuery, then the others as their first route comes (`kinds`)
    ingest: Ingest
    leadership: Leadership | None
    rendered: RenderedConfig
    stopping: threading.Event
    metrics: Metrics
    start_ingress: Callable[[JobConfig], Any]
    start_egress: Callable[[], Any]
    after_batch: Callable[[], None] = lambda: None  # records lost to retention, counted by the planning
    start_nats: Callable[[JobConfig], Any] | None = None  # None: availableNow (NATS has nothing to drain)
    reports: list[tuple[Any, Callable[[Any], None]]] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # of each query, in `queries` order
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
            if BridgeStopped.PREFIX not in str(error):
                log.exception("unexpected failure")
            raise BridgeStopped(stop_reason(error)) from None

    def _queries_run(self) -> bool:
        """Whether every query runs (one whose worker was slow to start is started again); their new
        progress reports recorded."""
        active = [q.isActive for q in self.queries]
        self.metrics.record_queries(self.kinds, active)
        if not all(active) and not self._restart_after_worker_start():
            return False
        for reports, record in self.reports:
            for progress in reports.new():
                record(progress)
        return True

    def start_queries(self) -> None:
        """The egress query, and those the routes ask for now; once (a warm standby starts them before it
        holds the lease, held until then: spark/gate.py)."""
        if "egress" not in self.kinds:
            self._add("egress", self.start_egress())
        self._start_ingress_for(self.rendered.config)
        self._start_nats_for(self.rendered.config)

    def replace_ended(self) -> None:
        """Start again each query that ended while it was held at the gate: it never planned or ran."""
        for index, query in enumerate(self.queries):
            if not query.isActive:
                log.warning("the %s query ended while held: %s", self.kinds[index], query.exception())
                self._restart(index)

    def _restart(self, index: int) -> None:
        from bridge_job.spark.progress import BatchReports

        restarted = self._start(self.kinds[index])
        self.queries[index] = restarted
        self.reports[index] = (BatchReports(restarted), self.reports[index][1])

    def _add(self, kind: str, query: Any) -> None:
        from bridge_job.spark.progress import BatchReports

        record = {"egress": self._record, "ingress": self._record_ingress, "nats": self._record_nats}[kind]
        self.queries.append(query)
        self.kinds.append(kind)
        self.reports.append((BatchReports(query), record))

    def _start_ingress_for(self, config: JobConfig) -> None:
        """The ingress query, started with the first kafkaToJms route: a bridge without one runs none."""
        if "ingress" not in self.kinds and config.routes_for(Direction.KAFKA_TO_JMS):
            self._add("ingress", self.start_ingress(config))

    def _start_nats_for(self, config: JobConfig) -> None:
        """The NATS query, started with the first NATS route (jmsToNats: its answers come there)."""
        if self.start_nats is not None and "nats" not in self.kinds and config.uses_nats:
            self._add("nats", self.start_nats(config))

    def _start(self, kind: str) -> Any:
        if kind == "egress":
            return self.start_egress()
        if kind == "ingress":
            return self.start_ingress(self.rendered.config)
        assert self.start_nats is not None
        return self.start_nats(self.rendered.config)

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
                raise BridgeStopped(stop_reason(exception))

    def _record(self, progress: Any) -> None:
        from bridge_job.supervision.telemetry import figures_from_progress

        try:
            self.metrics.record_batch(figures_from_progress(progress))
            self.after_batch()
        except Exception:  # telemetry must never stop the bridge
            log.warning("cannot record the figures of batch %s", progress.batchId, exc_info=True)

    def _record_ingress(self, progress: Any) -> None:
        from bridge_job.supervision.telemetry import ingress_figures

        try:
            self.metrics.record_ingress_batch(ingress_figures(progress))
            self.after_batch()
        except Exception:  # telemetry must never stop the bridge
            log.warning("cannot record the figures of ingress batch %s", progress.batchId, exc_info=True)

    def _record_nats(self, progress: Any) -> None:
        try:
            self.metrics.record_nats_interval(progress)
        except Exception:  # telemetry must never stop the bridge
            log.warning("cannot record the figures of NATS interval %s", progress.batchId, exc_info=True)

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
            self._start_ingress_for(changed)
            self._start_nats_for(changed)


def halt(ingest: Ingest, queries: list[Any]) -> None:
    """On losing the lease: stop taking messages and writing at once, another instance takes over."""
    ingest.stop_event.set()
    for query in queries:
        if query.isActive:
            query.stop()
