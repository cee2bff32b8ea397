"""The job's driver: check the topics, start ingest, the egress and ingress queries, follow config changes.

Exit status: 0 when stopped (SIGTERM, or `availableNow` done), 2 on a hard failure (the log's last line
says what is wrong and what to fix), 1 on a configuration error, 3 when this instance of an active/standby
pair lost its lease (`bridge_job/kube/leadership.py`; restarted, it comes back as the standby).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from bridge_job.config import (
    ConfigError,
    Direction,
    HealthKey,
    JobConfig,
    lease_holder_identity,
)
from bridge_job.config.rendered import RenderedConfig
from bridge_job.config.spark_settings import session_settings, with_command_line
from bridge_job.faults.outages import OutageListener
from bridge_job.faults.stops import BridgeStopped, LeadershipLost
from bridge_job.formats.journal import Epoch
from bridge_job.kafka.waiting import asking
from bridge_job.kube.leadership import EXIT_LEADERSHIP_LOST, Leadership, pod_name
from bridge_job.redaction import redact_logs
from bridge_job.spark.gate import Gate, Tenure
from bridge_job.supervision.driver import Supervision, halt
from bridge_job.supervision.stopping import interrupted_stop, stopped_with_us, unforeseen_reason
from bridge_job.supervision.topics import check_topics, ensure_pending_topic

if TYPE_CHECKING:
    from bridge_job.ingest.journalling import DriverIngest
    from bridge_job.kube.health import ConnectionHealth
    from bridge_job.supervision.flows import Flow, Probe
    from bridge_job.supervision.lag import LagWatch
    from bridge_job.supervision.telemetry import Metrics

log = logging.getLogger("jmsbridge.job")


@dataclass(frozen=True)
class JobOptions:
    config_paths: Sequence[Path]
    master: str | None = None
    checkpoint: Path | None = None
    checkpoints_dir: Path | None = None  # without `checkpoint`: `<checkpoints_dir>/<bridgeId>` (local runs)
    work_dir: Path | None = None
    instance: str = "a"
    available_now: bool = False
    metrics_port: int | None = None
    lease: bool = True  # take part in the active/standby election when the config asks for one
    cold_standby: bool = False  # a standby starts nothing before it holds the lease (to measure the warm one)
    spark_conf: tuple[tuple[str, str], ...] = ()  # set last, over the job's settings (JVM options added)


def run(options: JobOptions) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)
    redact_logs()  # no credential in any line the job logs, its `jmsbridge stopped:` line included
    if options.work_dir is not None:
        options.work_dir.mkdir(parents=True, exist_ok=True)
        return _run_in(options, options.work_dir)
    # One of its own, removed when the job ends: it holds the rendered config.
    with tempfile.TemporaryDirectory(prefix="jmsbridge-job-", ignore_cleanup_errors=True) as work_dir:
        return _run_in(options, Path(work_dir))


def _run_in(options: JobOptions, work_dir: Path) -> int:
    try:
        rendered = RenderedConfig(options.config_paths, work_dir)
    except ConfigError as error:
        log.error("invalid configuration:\n%s", error)
        return 1
    try:
        return _run(options, rendered, work_dir)
    except BridgeStopped as error:
        log.error("jmsbridge stopped: %s", error.reason)
        return 2
    except LeadershipLost as error:
        log.error("lost the lease (%s): processing stopped, restart as the standby", error.reason)
        return EXIT_LEADERSHIP_LOST
    except Exception as error:  # nothing caught it: still one stop line, and exit 2
        log.debug("stopping on", exc_info=True)
        if isinstance(lost := interrupted_stop(error), LeadershipLost):  # the cleanup failed after it
            log.error("lost the lease (%s): processing stopped, restart as the standby", lost.reason)
            return EXIT_LEADERSHIP_LOST
        log.error("jmsbridge stopped: %s", unforeseen_reason(error))
        return 2


def _run(options: JobOptions, rendered: RenderedConfig, work_dir: Path) -> int:
    from bridge_job.kafka.probe import KafkaProbe
    from bridge_job.kafka.registry import RegistryProbe, registry_at_start
    from bridge_job.kube.health import ConnectionHealth, HealthConfigMap, stops_reported
    from bridge_job.spark.live import LiveReceiver
    from bridge_job.supervision.checkpoints import Losses, prepare_checkpoint
    from bridge_job.supervision.flows import FLOWS
    from bridge_job.supervision.telemetry import Metrics

    config = rendered.config
    patience = config.bridge.outages.patience_seconds
    report = HealthConfigMap.for_job(config, options.instance)
    metrics = Metrics(config.bridge_id)
    metrics.serve(config.bridge.telemetry.port if options.metrics_port is None else options.metrics_port)
    kafka_health = ConnectionHealth(report, patience, "kafka", metrics.connection("kafka"))
    partitions = _kafka_at_start(config, kafka_health)
    watched = report is not None or metrics.served  # someone hears what the probes find
    probe = KafkaProbe(config.bridge.kafka, config.journal_topic, kafka_health) if watched else None
    registry_health = ConnectionHealth(
        report, patience, HealthKey.REGISTRY, metrics.connection("schemaRegistry")
    )
    registry = registry_at_start(config, registry_health)
    registry_probe = RegistryProbe(registry, registry_health) if registry is not None and watched else None
    checkpoints = options.checkpoints_dir or Path(config.bridge.spark.checkpoint.path)
    checkpoint = options.checkpoint or checkpoints / config.bridge_id
    log.info("checkpoint: %s", checkpoint.absolute())
    stopping = threading.Event()
    _stop_on_signals(stopping)  # a standby stops cleanly too
    leadership = Leadership.for_job(config, options.instance) if options.lease else None
    metrics.follow_role(options.instance, leadership)
    still_active = leadership.check if leadership is not None else lambda: None
    health = ConnectionHealth(report, patience, "jms", metrics.connection("jms"))
    in_tasks = _ingest_in_tasks(options)
    ingest = _ingest(
        config, partitions, metrics, health, options.instance, kafka_health, still_active, in_tasks
    )

    def check_checkpoint(may_reset: bool) -> None:
        prepare = functools.partial(prepare_checkpoint, config, checkpoint, report, may_reset=may_reset)
        asking(config, "checking the checkpoint", prepare)

    # Before the ingest takes a JMS message it could not deliver (a standby resets nothing: the active may):
    check_checkpoint(may_reset=leadership is None)
    # The tasks' live figures (spark/live.py), for whoever reads the metrics, and the ingest tasks' health.
    live = LiveReceiver(metrics.record_live) if metrics.served or in_tasks else None
    starts = _Starts(
        rendered, checkpoint, options.available_now, Gate.new(work_dir), live.port if live else 0
    )
    queries: list[Any] = []
    losses = Losses(checkpoint, metrics.record_lost, report)
    supervision = Supervision(
        queries,
        ingest,
        leadership,
        rendered,
        stopping,
        metrics,
        FLOWS,
        starts.start,
        losses.sync,
        options.available_now,
    )
    watches: list[Any] = [w for w in (probe, registry_probe, live) if w is not None]
    try:
        with stops_reported(report):
            if leadership is None:
                starts.spark = _spark_session(config, options)
            elif not _stand_by(options, starts, supervision, leadership, ingest, stopping):
                return 0  # a standby asked to stop
            else:
                check_checkpoint(may_reset=True)  # the checkpoint moved on while it waited
                supervision.replace_ended()  # a held query that ended never ran: started again
            if leadership is not None:  # before the gate opens: from then on the egress writes
                leadership.on_lost(lambda reason: halt(ingest, queries, starts.gate))
                leadership.on_renewed(lambda: starts.gate.renew(_tenure(leadership)))
            _take_over(
                ingest, in_tasks, starts.gate, _tenure(leadership), job_epoch(leadership, options.instance)
            )
            still_active()  # the lease lost while the ingest connected (JMS may take minutes): start nothing
            supervision.start_queries()
            if not ingest.connected(lambda: not stopping.is_set() and all(q.isActive for q in queries)):
                return supervision.run()  # a query ended, or a stop was asked for: it says which
            metrics.running()
            log.info(
                "bridge %s running: %d sources -> journal %s -> %d routes; %d kafkaToJms routes; "
                "%d natsToJms routes",
                config.bridge_id,
                len(config.bridge.jms.sources),
                config.journal_topic,
                len(config.routes_for(Direction.JMS_TO_KAFKA)),
                len(config.routes_for(Direction.KAFKA_TO_JMS)),
                len(config.routes_for(Direction.NATS_TO_JMS)),
            )
            # Again: the JMS client's JVM, started in this process by the ingest, installed its own handlers.
            _stop_on_signals(stopping)
            watches += _flow_probes(config, report, patience, metrics) if watched else []
            watches += [lag] if (lag := _live_lag(options, rendered, metrics)) is not None else []
            return supervision.run()
    finally:
        ingest.stop()
        with _unless_stopping(stopping):
            for running in queries:
                if running.isActive:
                    running.stop()
        starts.gate.shut()  # the planning of a query stopped while held ends too
        if leadership is not None:
            leadership.stop()  # releases the lease (unless lost) now that nothing is processed
        for watch in [*watches, report]:
            if watch is not None:
                watch.stop()
        if starts.spark is not None:
            with _unless_stopping(stopping):
                starts.spark.stop()
        starts.gate.remove()


def _take_over(ingest: DriverIngest, in_tasks: bool, gate: Gate, tenure: Tenure | None, epoch: Epoch) -> None:
    """Open the gate and start the ingest for `epoch`. The held queries resume while the driver's ingest
    takes the journal and connects: neither waits for the other (the egress skips the epoch marker, and
    reads whatever the ingest commits). Ingest tasks wait: every journal id is taken before any task can
    take its own."""
    if in_tasks:
        ingest.start(epoch)
    gate.open(tenure, epoch)
    if not in_tasks:
        ingest.start(epoch)


def _ingest_in_tasks(options: JobOptions) -> bool:
    """Whether an `ingest` query's tasks take the messages on executors (ingest/source.py); availableNow
    runs no such query (JMS has no end to drain to), and the driver ingests while the journal drains."""
    from bridge_job.ingest.assignment import runs_on_executors

    return runs_on_executors() and not options.available_now


def _ingest(
    config: JobConfig,
    partitions: int,
    metrics: Metrics,
    health: ConnectionHealth,
    instance: str,
    kafka_health: ConnectionHealth,
    still_active: Callable[[], None],
    in_tasks: bool,
) -> DriverIngest:
    """What the driver runs of the ingest: all of it, or the takeover's fence when tasks do the rest."""
    from bridge_job.ingest.journalling import Ingest, IngestInTasks

    if in_tasks:
        ingest = IngestInTasks(config, partitions, health, kafka_health, still_active)
        metrics.hear_ingest_rows(ingest.rows.heard)
        return ingest
    return Ingest(config, partitions, metrics.record_ingest, health, instance, kafka_health, still_active)


def _tenure(leadership: Leadership | None) -> Tenure | None:
    """The tenure the gate carries to each planning (spark/gate.py); none without a lease."""
    if leadership is None:
        return None
    acquired, _ = leadership.tenure()
    return Tenure(leadership.identity, acquired or "", leadership.valid_until)


@dataclass
class _Starts:
    """How the job starts its queries, each held at `gate` until it opens (spark/gate.py)."""

    rendered: RenderedConfig
    checkpoint: Path
    available_now: bool
    gate: Gate
    live_port: int = 0  # the driver's port for the tasks' live reports (spark/live.py)
    spark: Any = None  # the session, once there is one

    @property
    def live(self) -> str:
        """Where the tasks report: the driver's host as the executors reach it, and the port."""
        host = self.spark.sparkContext.getConf().get("spark.driver.host", "127.0.0.1")
        return f"{host}:{self.live_port}" if self.live_port else ""

    def start(self, flow: Flow, current: JobConfig) -> Any:
        """`flow`'s query for the config as it is `current`ly."""
        from bridge_job.supervision.queries import flow_query

        # Each flow's checkpoint but the egress's is inside the bridge's: all go wherever that one goes.
        checkpoint, path = str(self.checkpoint / flow.checkpoint), str(self.rendered.path)
        return flow_query(
            self.spark, flow, path, current, checkpoint, self.available_now, self.gate, self.live
        )


def _stand_by(
    options: JobOptions,
    starts: _Starts,
    supervision: Supervision,
    leadership: Leadership,
    ingest: DriverIngest,
    stopping: threading.Event,
) -> bool:
    """Stand by until this instance holds the lease (True), or is asked to stop (False).

    A warm standby starts what it can before, consuming and writing nothing, so that taking over costs
    the lease wait and little more: the Spark session, the JMS client (a probe connection), the journal
    producer, Spark's Python workers, and the queries, held at the gate. A reset the operator asked for
    moves the checkpoint aside when the instance takes over: its queries start after it."""
    from bridge_job.supervision.checkpoints import reset_due
    from bridge_job.supervision.queries import tasks_at_once
    from bridge_job.supervision.workers import WarmWorkers

    config = starts.rendered.config
    warm: WarmWorkers | None = None
    if not options.cold_standby:
        starts.spark = _spark_session(config, options)
        ingest.warm_up(options.instance)
        _stop_on_signals(stopping)  # the JMS client's JVM installed its own handlers
        warm = WarmWorkers(starts.spark, tasks_at_once(starts.spark, config))
        warm.start()
        if not reset_due(config.checkpoint_reset, starts.checkpoint):
            supervision.start_queries()
        log.info("standby: warm (Spark session and workers, queries, JMS client, journal producer)")
    try:
        if not leadership.acquire(stopping):
            return False
    finally:
        if warm is not None:
            warm.stop()
    if starts.spark is None:
        starts.spark = _spark_session(config, options)
    return True


def _flow_probes(config: JobConfig, report: Any, patience: float, metrics: Metrics) -> list[Probe]:
    """The probes of the flows the routes want (NATS's: NatsConnected in the bridge's status, in a cluster,
    and `jmsbridge_connected{system="nats"}`)."""
    from bridge_job.kube.health import ConnectionHealth
    from bridge_job.supervision.flows import FLOWS

    return [
        flow.probe(config, ConnectionHealth(report, patience, flow.probed, metrics.connection(flow.probed)))
        for flow in FLOWS
        if flow.probe is not None and flow.wanted(config)
    ]


def _live_lag(options: JobOptions, rendered: RenderedConfig, metrics: Metrics) -> LagWatch | None:
    """Real-time mode: the lag read live from Kafka, since the tasks' rows come once per interval."""
    from bridge_job.spark.intervals import REAL_TIME, query_mode
    from bridge_job.supervision.lag import LagWatch

    if query_mode(rendered.config, options.available_now) != REAL_TIME:
        return None
    metrics.live_lag = True
    return LagWatch(lambda: rendered.config, metrics.set_journal_lag, metrics.set_ingress_lag)


def _kafka_at_start(config: JobConfig, listener: OutageListener) -> int:
    """Once Kafka answers and the bridge's topics (journal, pending requests) are there: the journal's
    partitions. One admin client and one listing of the topics serve every check."""
    from bridge_job.journal.topic import ensure_journal_topic
    from bridge_job.kafka.startup import wait_for_kafka

    admin = wait_for_kafka(config.bridge.kafka, config.bridge.outages.patience_seconds, listener)
    asking(config, "checking the topics", lambda: check_topics(config, admin))
    partitions = asking(config, "checking the journal topic", lambda: ensure_journal_topic(config, admin))
    asking(config, "checking the pending-request topic", lambda: ensure_pending_topic(config, admin))
    return partitions


@contextlib.contextmanager
def _unless_stopping(stopping: threading.Event) -> Iterator[None]:
    """A failure while a stop was asked for is no hard failure: a signal to the whole process group
    (`kill -- -PGID`, a terminal's Ctrl-C) stops Spark's JVM too, and py4j then fails however it likes."""
    try:
        yield
    except Exception as error:
        if not stopping.is_set():
            raise
        log.info("stopping: %s", stopped_with_us(error))


def job_epoch(leadership: Leadership | None, instance: str) -> Epoch:
    """Whose journal it is from now on: this instance, in the tenure it just began."""
    if leadership is None:
        return Epoch(lease_holder_identity(instance, pod_name()), instance)
    tenure_start, transitions = leadership.tenure()
    return Epoch(leadership.identity, instance, tenure_start, transitions)


def _spark_session(config: JobConfig, options: JobOptions) -> Any:
    """The job's Spark session: our settings, then the command line's, and the journal source."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from bridge_job.supervision.queries import register_sources

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(f"jmsbridge-{config.bridge_id}")
    if options.master:
        builder = builder.master(options.master).config("spark.ui.enabled", "false")
    submitted: dict[str, str] = {}
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # run by spark-submit, whose JVM holds what it was given
        # (under the spark-operator: the SparkApplication's sparkConf). Otherwise the session launches the
        # JVM itself, with the settings below: connecting earlier would launch it without them.
        SparkContext._ensure_initialized()
        submitted = dict(SparkConf().getAll())
    for name, value in with_command_line(session_settings(submitted), options.spark_conf).items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    register_sources(spark)
    return spark


def _stop_on_signals(stopping: threading.Event) -> None:
    """SIGTERM and SIGINT set `stopping`: the job stops cleanly (and a holder releases its lease)."""

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()
        # The signal often reaches Spark's JVM too (a process group), and py4j then logs each call that
        # finds it gone: noise on a stop that was asked for (PySpark's own threads still print some).
        logging.getLogger("py4j").setLevel(logging.CRITICAL)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
