"""Prometheus metrics of the operator: reconciliations (count, errors, duration), writes to children, and
each bridge's readiness.

Exposed on `--metrics-port` (env `JMSBRIDGE_METRICS_PORT`) at `/metrics` by `prometheus_client`'s own
server, started and stopped with the operator.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client import Counter, Gauge, Histogram, start_http_server

RECONCILES = Counter(
    "jmsbridge_operator_reconciles_total",
    "Reconciliations, by kind of object and result (ok, error).",
    ["kind", "result"],
)
ERRORS = Counter(
    "jmsbridge_operator_reconcile_errors_total",
    "Failed reconciliations, by kind of object and error (the exception's class or API status).",
    ["kind", "error"],
)
DURATION = Histogram(
    "jmsbridge_operator_reconcile_duration_seconds",
    "How long one reconciliation took, by kind of object.",
    ["kind"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
KAFKA_CHECKS = Counter(
    "jmsbridge_operator_kafka_checks_total",
    "Kafka checks of bridges, by outcome (the KafkaReady reason: Verified, TopicNotFound, ...).",
    ["reason"],
)
BRIDGE_READY = Gauge(
    "jmsbridge_operator_bridge_ready",
    "1 while a JmsBridge's Ready condition is True, 0 otherwise, with the condition's reason (as the "
    "operator last wrote it) and the bridge id (the `bridge` label of the job's own metrics).",
    ["bridge_namespace", "bridge", "bridge_id", "reason"],
)
# The bridge id and reason of each bridge's series, to drop it on a change.
_ready_series: dict[tuple[str, str], tuple[str, str]] = {}
_ready_lock = threading.Lock()
WRITES = Counter(
    "jmsbridge_operator_writes_total",
    "Writes to child objects and statuses, by kind and verb (create, replace, delete, status).",
    ["kind", "verb"],
)


def bridge_ready(namespace: str, name: str, condition: Mapping[str, Any] | None, bridge_id: str = "") -> None:
    """A bridge's readiness as its Ready condition now says; None: the bridge is gone. One series per
    bridge: the one of its previous reason (or id) goes."""
    key = (namespace, name)
    series = None if condition is None else (bridge_id, str(condition.get("reason") or ""))
    with _ready_lock:
        previous = _ready_series.pop(key, None)
        if previous is not None and previous != series:
            with contextlib.suppress(KeyError):
                BRIDGE_READY.remove(namespace, name, *previous)
        if condition is None or series is None:
            return
        _ready_series[key] = series
        BRIDGE_READY.labels(namespace, name, *series).set(1 if condition.get("status") == "True" else 0)


@contextlib.contextmanager
def measured(kind: str) -> Iterator[None]:
    """Count and time one reconciliation; an exception counts as an error and goes on."""
    started = time.perf_counter()
    try:
        yield
    except Exception as error:
        status = getattr(error, "status", None)
        ERRORS.labels(kind, f"Api{status}" if status else type(error).__name__).inc()
        RECONCILES.labels(kind, "error").inc()
        raise
    else:
        RECONCILES.labels(kind, "ok").inc()
    finally:
        DURATION.labels(kind).observe(time.perf_counter() - started)


class MetricsServer:
    """The `/metrics` endpoint; `stop()` frees the port (operators restart within one process in tests)."""

    def __init__(self, port: int, address: str = "0.0.0.0") -> None:
        self._server: Any
        self._thread: threading.Thread
        self._server, self._thread = start_http_server(port, addr=address)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
