"""Leader election among operator replicas: the holder of one Lease runs kopf, the others stand by.

With `jmsbridge operator --leader-election` (the chart's default) every replica first competes for the
`coordination.k8s.io/v1` Lease `jms-bridge-operator` in the operator's own namespace, with the protocol
the bridge job's active/standby pair uses (`bridge_job.kube.leadership`): one holder at a time, renewed every
D/3, taken over D after the last renewal a standby saw (D = `--leader-election-lease-seconds`), released
on a clean stop so that the standby takes over at its next poll.

- A standby runs no kopf at all (no watches, no handlers, no Kafka checks); it answers its liveness and
  readiness probes itself (200 `standby` on the liveness address), so a rollout of several replicas
  proceeds and Kubernetes does not restart a healthy standby, and serves `/metrics` (no reconciles).
- The holder runs kopf until it is stopped, or until it loses the lease (another holder, or no renewal
  for 2D/3): then kopf is stopped and the process exits with `EXIT_LEADERSHIP_LOST` (3); restarted, it
  comes back as a standby.

Why not kopf's peering: peering holds no lock. Operators of the same priority all pause, and replicas
starting together both handle events until each has seen the other's keep-alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import logging
import os
import signal
import threading
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any, Final

import kopf

from bridge_job.contract.clients import (
    EXIT_LEADERSHIP_LOST,
    Kube,
    KubernetesLeases,
    Leadership,
    LeaseRefused,
    pod_name,
)
from jmsbridge_operator.metrics import MetricsServer
from jmsbridge_operator.options import OperatorOptions

logger = logging.getLogger("jmsbridge_operator.election")

LEASE_NAME: Final = "jms-bridge-operator"
LEASE_SECONDS: Final = 15
ENV_NAMESPACE: Final = "POD_NAMESPACE"  # the chart sets it from the pod's metadata.namespace


class ElectionError(Exception):
    """The election cannot run (no namespace for the lease, no permission on leases)."""


@dataclass(frozen=True)
class Election:
    namespace: str
    lease: str = LEASE_NAME
    lease_seconds: int = LEASE_SECONDS
    identity: str = ""  # the pod's name by default

    @classmethod
    def of(cls, namespace: str | None, lease: str | None, lease_seconds: int | None) -> Election:
        namespace = namespace or os.environ.get(ENV_NAMESPACE)
        if not namespace:
            raise ElectionError(
                f"leader election needs the namespace of its lease: pass --leader-election-namespace or "
                f"set {ENV_NAMESPACE} (the chart sets it from the pod's namespace)"
            )
        return cls(namespace, lease or LEASE_NAME, lease_seconds or LEASE_SECONDS, pod_name())

    @property
    def where(self) -> str:
        return f"{self.namespace}/{self.lease}"


def run_elected(election: Election, kopf_settings: Mapping[str, Any], liveness: str | None) -> int:
    """Stand by until this replica holds the lease, then run kopf (`kopf.run`'s keyword arguments) until
    it stops, or until the lease is lost. Returns the process's exit status."""
    store = KubernetesLeases(election.namespace, election.lease, Kube.connect())
    leadership = Leadership(store, election.identity, election.lease_seconds)
    stopping = threading.Event()
    with _stopped_by_signals(stopping), _standby_probes(liveness), _standby_metrics():
        leading = acquire(leadership, election, stopping)
    if not leading:
        return 0  # stopped while standing by

    async def lead() -> None:
        # An asyncio flag of kopf's own loop: kopf would wait for a threading one in an executor thread,
        # which keeps the loop from closing once kopf has stopped for another reason (SIGTERM).
        loop, stop_flag = asyncio.get_running_loop(), asyncio.Event()

        def stop(reason: str) -> None:
            loop.call_soon_threadsafe(stop_flag.set)

        leadership.on_lost(stop)
        await _operate(kopf_settings, stop_flag)

    try:
        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(lead())
    finally:
        lost = leadership.lost.is_set()
        leadership.stop(release=not lost)  # kopf has stopped: the standby may take over at once
    if lost:
        reason = leadership.loss_reason
        logger.error("lost the lease %s (%s): stopped; restarted, it stands by", election.where, reason)
        return EXIT_LEADERSHIP_LOST
    return 0


def acquire(leadership: Leadership, election: Election, stopping: threading.Event) -> bool:
    """Stand by until this replica holds the lease (True) or `stopping` is set (False)."""
    try:
        return leadership.acquire(stopping)
    except LeaseRefused as error:  # a permanent API error, e.g. 403: no retry will help
        raise ElectionError(
            f"{error.cause}; the operator's service account needs get, create and update on leases in "
            f"namespace {election.namespace} (the chart's Role grants them)"
        ) from None


async def _operate(kopf_settings: Mapping[str, Any], stop_flag: asyncio.Event) -> None:
    """`kopf.operator`, plus: when a root task ends (SIGTERM's handling among them), the stop flag is set,
    so that kopf's waiter on it ends too instead of holding the shutdown for 5 s as a hung task."""
    existing = asyncio.all_tasks()
    tasks = await kopf.spawn_tasks(**kopf_settings, stop_flag=stop_flag)
    for task in tasks:
        task.add_done_callback(lambda _: stop_flag.set())
    await kopf.run_tasks(tasks, ignored=existing)


@contextlib.contextmanager
def _stopped_by_signals(stopping: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT end the standby (kopf installs its own handlers once it runs)."""

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def _standby_metrics() -> Iterator[None]:
    """Serve /metrics while standing by too, so that a scrape of a standby finds its target up; the
    operator's startup serves it again once this replica leads."""
    options = OperatorOptions.from_env()
    if options.metrics_port is None:
        yield
        return
    server = MetricsServer(options.metrics_port, options.metrics_address)
    try:
        yield
    finally:
        server.stop()


class _StandbyHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"standby\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a probe every few seconds is not news


@contextlib.contextmanager
def _standby_probes(liveness: str | None) -> Iterator[None]:
    """Answer the probes on the liveness endpoint's address while standing by; kopf takes it over."""
    if not liveness:
        yield
        return
    url = urllib.parse.urlsplit(liveness)
    server = http.server.ThreadingHTTPServer((url.hostname or "0.0.0.0", url.port or 80), _StandbyHandler)
    thread = threading.Thread(target=server.serve_forever, name="standby-probes", daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
