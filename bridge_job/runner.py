"""The job's driver: check the topics, start ingest, the egress and ingress queries, follow config changes.

Exit status: 0 when stopped (SIGTERM, or `availableNow` done), 2 on a hard failure (the log's last line
says what is wrong and what to fix), 1 on a configuration error, 3 when this instance of an active/standby
pair lost its lease (`bridge_job/leadership.py`; restarted, it comes back as the standby).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import yaml
from confluent_kafka.admin import AdminClient

from bridge_job.config import ConfigError, Direction, JobConfig, is_topic_pattern, lease_holder_identity
from bridge_job.errors import BridgeStopped
from bridge_job.journal import Epoch
from bridge_job.kafka_clients import client_config
from bridge_job.leadership import EXIT_LEADERSHIP_LOST, Leadership, LeadershipLost, pod_name
from bridge_job.loading import load_job_config, rendered_document
from bridge_job.redaction import redact_logs
from bridge_job.replies import reply_topics
from bridge_job.spark_settings import session_settings

if TYPE_CHECKING:
    from bridge_job.ingest import Ingest
    from bridge_job.telemetry import Metrics

log = logging.getLogger("jmsbridge.job")

POLL_SECONDS = 0.25  # shorter than a batch, so that progress reports are mostly read one at a time
WORKER_START_FAILURE = "Python worker failed to connect back"
MAX_WORKER_RESTARTS = 3


@dataclass(frozen=True)
class JobOptions:
    config_paths: Sequence[Path]
    master: str | None = None
    checkpoint: Path | None = None
    work_dir: Path | None = None
    instance: str = "a"
    available_now: bool = False
    metrics_port: int | None = None
    lease: bool = True  # take part in the active/standby election when the config asks for one
    cold_standby: bool = False  # a standby starts nothing before it holds the lease (to measure the warm one)
    spark_conf: tuple[tuple[str, str], ...] = ()  # set last, over the job's settings


def destination_topics(config: JobConfig) -> list[str]:
    """The topics the routes write and read by name, reply topics included (not a kafkaToJms pattern)."""
    named = {r.spec.kafka_topic for r in config.routes if not is_topic_pattern(r.spec.kafka_topic)}
    topics = named | set(reply_topics(config))
    if config.bridge.routing.dead_letter_topic:
        topics.add(config.bridge.routing.dead_letter_topic)
    return sorted(topics)


def check_topics(config: JobConfig) -> None:
    """Stop before starting when a destination topic is missing: a hard failure (docs/egress.md, Failures)."""
    topics = destination_topics(config)
    if not topics:
        return
    metadata = AdminClient(client_config(config.bridge.kafka)).list_topics(timeout=30)
    missing = [t for t in topics if t not in metadata.topics or metadata.topics[t].error is not None]
    if missing:
        raise BridgeStopped(
            f"topic{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"{'do' if len(missing) > 1 else 'does'} not exist: create them or fix the routes"
        )


def stop_reason(error: BaseException) -> str:
    """The `jmsbridge stopped:` line out of an exception, however deep Spark wrapped it."""
    if jvm_gone(error):
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        return (
            f"Spark's JVM stopped answering ({first}): it died or was killed; its last lines above say why "
            "(an OutOfMemoryError: give the driver more memory, spec.spark.driver.memory)"
        )
    for line in str(error).splitlines():
        index = line.find(BridgeStopped.PREFIX)
        if index >= 0:
            return line[index + len(BridgeStopped.PREFIX) :].strip()
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


class RenderedConfig:
    """The one config file executors read. From resource YAML it is rendered into the work dir and
    re-rendered when those files change; a rendered JobConfig (a mounted ConfigMap) is used as is."""

    def __init__(self, paths: Sequence[Path], work_dir: Path) -> None:
        self.sources = list(paths)
        self.config = load_job_config(self.sources)
        rendered_input = rendered_document(self.sources) is not None
        self.path = paths[0] if rendered_input else work_dir / "job.yaml"
        self._stamps = self._stat()
        if not rendered_input:
            self._write(self.config)

    def _stat(self) -> list[tuple[int, int]]:
        return [(p.stat().st_mtime_ns, p.stat().st_size) for p in self.sources]

    def _write(self, config: JobConfig) -> None:
        text = yaml.safe_dump(config.dump(), sort_keys=False)
        with tempfile.NamedTemporaryFile("w", dir=self.path.parent, delete=False, suffix=".tmp") as f:
            f.write(text)
        os.replace(f.name, self.path)  # atomic: a reader sees the old file or the new one

    def reload(self) -> JobConfig | None:
        """The new config when the sources changed and are valid; None when unchanged."""
        stamps = self._stat()
        if stamps == self._stamps:
            return None
        self._stamps = stamps
        config = load_job_config(self.sources)
        if config == self.config:
            return None
        if self.path not in self.sources:
            self._write(config)
        self.config = config
        return config


def run(options: JobOptions) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)
    redact_logs()  # no credential in any line the job logs, its `jmsbridge stopped:` line included
    work_dir = options.work_dir or Path(tempfile.mkdtemp(prefix="jmsbridge-job-"))
    work_dir.mkdir(parents=True, exist_ok=True)
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
        log.error("lost the lease (%s): processing stopped, restart as the standby", error)
        return EXIT_LEADERSHIP_LOST
    except Exception as error:  # nothing caught it: still one stop line, and exit 2
        log.debug("stopping on", exc_info=True)
        log.error("jmsbridge stopped: %s", unforeseen_reason(error))
        return 2


def jvm_gone(error: BaseException) -> bool:
    """Whether py4j lost Spark's JVM (killed, or died of an OutOfMemoryError)."""
    from py4j.protocol import Py4JNetworkError  # type: ignore[import-untyped]

    return isinstance(error, Py4JNetworkError | ConnectionError | EOFError)


def stopped_with_us(error: BaseException) -> str:
    """What a failure during a requested stop was, without the advice `stop_reason` gives for a crash."""
    if jvm_gone(error):
        return "Spark's JVM had stopped already (the signal reached it too)"
    return stop_reason(error)


def unforeseen_reason(error: BaseException) -> str:
    """The stop line of an error nothing caught. Once Spark's JVM is gone, the cleanup after a hard failure
    fails too, and its error hides the failure it interrupted: that one is the reason."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, BridgeStopped):
            return seen.reason
        seen = seen.__context__
    return stop_reason(error)


def _run(options: JobOptions, rendered: RenderedConfig, work_dir: Path) -> int:
    from bridge_job.health import HealthConfigMap, JmsHealth
    from bridge_job.ingest import Ingest, ensure_journal_topic
    from bridge_job.journal_writer import JournalWriter
    from bridge_job.kafka_startup import wait_for_kafka
    from bridge_job.pipeline import egress_query, ingress_query
    from bridge_job.telemetry import Metrics

    config = rendered.config
    wait_for_kafka(config.bridge.kafka)
    check_topics(config)
    partitions = ensure_journal_topic(config)
    metrics = Metrics(config.bridge_id)
    metrics.serve(config.bridge.telemetry.port if options.metrics_port is None else options.metrics_port)
    checkpoint = options.checkpoint or Path(config.bridge.spark.checkpoint.path) / config.bridge_id
    stopping = threading.Event()
    _stop_on_signals(stopping)  # a standby stops cleanly too
    leadership = Leadership.for_job(config, options.instance) if options.lease else None
    still_active = leadership.check if leadership is not None else lambda: None
    report = HealthConfigMap.for_job(config, options.instance)
    health = JmsHealth(report, config.bridge.jms.reconnect.window_seconds)
    writer = JournalWriter(config, partitions, still_active)
    ingest = Ingest(config, writer, metrics.record_ingest, health, options.instance)
    spark = _session_when_active(config, options, leadership, ingest, stopping)
    if spark is None:
        return 0  # a standby asked to stop

    ingest.start(job_epoch(leadership, options.instance))

    def start_egress() -> Any:
        current = rendered.config
        return egress_query(spark, str(rendered.path), current, str(checkpoint), options.available_now)

    queries = [start_egress()]

    def start_ingress(current: JobConfig) -> Any:
        # Its own checkpoint, inside the egress one: both go wherever the bridge's checkpoint goes.
        ingress_checkpoint = str(checkpoint / "ingress")
        return ingress_query(spark, str(rendered.path), current, ingress_checkpoint, options.available_now)

    if leadership is not None:
        leadership.on_lost(lambda reason: _halt(ingest, queries))
    log.info(
        "bridge %s running: %d sources -> journal %s -> %d routes; %d kafkaToJms routes",
        config.bridge_id,
        len(config.bridge.jms.sources),
        config.journal_topic,
        len(config.routes_for(Direction.JMS_TO_KAFKA)),
        len(config.routes_for(Direction.KAFKA_TO_JMS)),
    )
    # Again: the JMS client's JVM, started in this process by the ingest, installed its own handlers.
    _stop_on_signals(stopping)
    try:
        supervision = _Supervision(
            queries, ingest, leadership, rendered, stopping, metrics, start_ingress, start_egress
        )
        return supervision.run()
    finally:
        ingest.stop()
        with _unless_stopping(stopping):
            for running in queries:
                if running.isActive:
                    running.stop()
        if leadership is not None:
            leadership.stop()  # releases the lease (unless lost) now that nothing is processed
        if report is not None:
            report.stop()
        with _unless_stopping(stopping):
            spark.stop()


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


def _session_when_active(
    config: JobConfig,
    options: JobOptions,
    leadership: Leadership | None,
    ingest: Ingest,
    stopping: threading.Event,
) -> Any:
    """The Spark session once this instance is the active one; None when stopped while standing by.

    A warm standby starts everything it can before it holds the lease (consuming and writing nothing), so
    that taking over costs the lease wait and starting the queries, not a cold start."""
    spark: Any = None
    if leadership is None or not options.cold_standby:
        spark = _spark_session(config, options)
        if leadership is not None:
            ingest.warm_up(options.instance)
            _stop_on_signals(stopping)  # the JMS client's JVM installed its own handlers
            _warm_python_workers(spark)
            log.info("standby: warm (Spark session and workers, JMS client, journal producer)")
    if leadership is not None and not leadership.acquire(stopping):
        if spark is not None:
            spark.stop()
        return None
    return spark if spark is not None else _spark_session(config, options)


def _warm_python_workers(spark: Any) -> None:
    """Start PySpark's worker daemon with the tasks' modules imported, so the first batch after a takeover
    does not wait for them. Only a head start: a failure here is logged, the takeover starts them anyway."""
    try:
        spark.sparkContext.parallelize([0], 1).map(_import_task_modules).collect()
    except Exception as error:
        log.warning("standby: could not warm up Spark's Python workers: %s", stop_reason(error))


def _import_task_modules(value: int) -> int:
    import bridge_job.egress_task  # noqa: F401

    return value


def _spark_session(config: JobConfig, options: JobOptions) -> Any:
    """The job's Spark session: our settings, then the command line's, and the journal source."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from bridge_job.pipeline import register_sources

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
    for name, value in [*session_settings(submitted).items(), *options.spark_conf]:
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


@dataclass
class _Supervision:
    """The driver's loop while the bridge runs: the lease, ingest failures, route changes."""

    queries: list[Any]  # the egress StreamingQuery, then the ingress one once there are kafkaToJms routes
    ingest: Ingest
    leadership: Leadership | None
    rendered: RenderedConfig
    stopping: threading.Event
    metrics: Metrics
    start_ingress: Callable[[JobConfig], Any]
    start_egress: Callable[[], Any]
    reports: list[tuple[Any, Callable[[Any], None]]] = field(default_factory=list)
    worker_restarts: int = 0

    def run(self) -> int:
        """0 once stopped; BridgeStopped for a hard failure, LeadershipLost when the lease went."""
        from bridge_job.pipeline import BatchReports

        (egress,) = self.queries
        self.reports.append((BatchReports(egress), self._record))
        self._start_ingress_for(self.rendered.config)
        try:
            while not self.stopping.is_set():
                if not all(q.isActive for q in self.queries) and not self._restart_after_worker_start():
                    break
                self.queries[0].awaitTermination(POLL_SECONDS)
                for reports, record in self.reports:
                    for progress in reports.new():
                        record(progress)
                self._check_lease()
                if self.ingest.failure is not None:
                    raise self.ingest.failure
                self._reload_routes()
            self._check_lease()  # a query stopped because the lease was lost: no failure of its own
            self._raise_failure()
            if not self.stopping.is_set():  # availableNow: one query is done, the other drains too
                for query in self.queries:
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

    def _start_ingress_for(self, config: JobConfig) -> None:
        """The ingress query, started with the first kafkaToJms route: a bridge without one runs none."""
        from bridge_job.pipeline import BatchReports

        if len(self.queries) == 1 and config.routes_for(Direction.KAFKA_TO_JMS):
            ingress = self.start_ingress(config)
            self.queries.append(ingress)
            self.reports.append((BatchReports(ingress), self._record_ingress))

    def _restart_after_worker_start(self) -> bool:
        """Start again a query that died because Spark's Python worker was slow to start (Spark gives it
        10 s, which a busy node can miss): from its checkpoint, so nothing is lost; a few times at most."""
        from bridge_job.pipeline import BatchReports

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
            restarted = self.start_egress() if index == 0 else self.start_ingress(self.rendered.config)
            self.queries[index] = restarted
            self.reports[index] = (BatchReports(restarted), self.reports[index][1])
            return True
        return False

    def _raise_failure(self) -> None:
        for query in self.queries:
            exception = query.exception()
            if exception is not None:
                raise BridgeStopped(stop_reason(exception))

    def _record(self, progress: Any) -> None:
        from bridge_job.telemetry import figures_from_progress

        try:
            self.metrics.record_batch(figures_from_progress(progress))
        except Exception:  # telemetry must never stop the bridge
            log.warning("cannot record the figures of batch %s", progress.batchId, exc_info=True)

    def _record_ingress(self, progress: Any) -> None:
        from bridge_job.telemetry import ingress_figures

        try:
            self.metrics.record_ingress_batch(ingress_figures(progress))
        except Exception:  # telemetry must never stop the bridge
            log.warning("cannot record the figures of ingress batch %s", progress.batchId, exc_info=True)

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
            check_topics(changed)
            log.info("routes reloaded: %s", ", ".join(r.name for r in changed.routes) or "none")
            self._start_ingress_for(changed)


def _halt(ingest: Ingest, queries: list[Any]) -> None:
    """On losing the lease: stop taking messages and writing at once, another instance takes over."""
    ingest.stop_event.set()
    for query in queries:
        if query.isActive:
            query.stop()
