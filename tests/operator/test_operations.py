"""Operational parts: settings from the environment, metrics, and coalesced reconciliations."""

from __future__ import annotations

import socket
import threading
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from jmsbridge_operator import metrics
from jmsbridge_operator.kafka_checks.evaluation import CheckSettings
from jmsbridge_operator.options import OperatorOptions
from jmsbridge_operator.reconciler import Reconciler


def test_options_from_environment() -> None:
    assert OperatorOptions.from_env({}) == OperatorOptions()
    custom = OperatorOptions.from_env(
        {"JMSBRIDGE_METRICS_PORT": "9100", "JMSBRIDGE_RESYNC_SECONDS": "30", "JMSBRIDGE_WATCH_TIMEOUT": "60"}
    )
    assert (custom.metrics_port, custom.resync_seconds, custom.watch_timeout_seconds) == (9100, 30.0, 60)
    assert custom.kafka_checks is True
    assert custom.kafka_check_settings() == CheckSettings(interval_seconds=60.0, grace_seconds=300.0)
    checks = OperatorOptions.from_env(
        {"JMSBRIDGE_KAFKA_CHECK_INTERVAL": "2", "JMSBRIDGE_KAFKA_GRACE_PERIOD": "10"}
    ).kafka_check_settings()
    assert (checks.interval_seconds, checks.grace_seconds, checks.retry_seconds) == (2.0, 10.0, 2.0)
    for off in ("false", "0", "no", "Off"):
        assert OperatorOptions.from_env({"JMSBRIDGE_KAFKA_CHECKS": off}).kafka_checks is False
    with pytest.raises(ValueError, match="interval"):
        OperatorOptions.from_env({"JMSBRIDGE_KAFKA_CHECK_INTERVAL": "0"})
    # The API server parses a watch's `timeoutSeconds` as an integer: "300.0" is refused with a 400.
    with pytest.raises(ValueError, match=r"JMSBRIDGE_WATCH_TIMEOUT='300\.0': must be a whole number"):
        OperatorOptions.from_env({"JMSBRIDGE_WATCH_TIMEOUT": "300.0"})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_metrics_endpoint_counts_reconciliations() -> None:
    with metrics.measured("bridge"):
        pass
    with pytest.raises(RuntimeError), metrics.measured("bridge"):
        raise RuntimeError("boom")
    port = free_port()
    server = metrics.MetricsServer(port, "127.0.0.1")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
    finally:
        server.stop()
    assert 'jmsbridge_operator_reconciles_total{kind="bridge",result="ok"}' in text
    assert 'jmsbridge_operator_reconcile_errors_total{error="RuntimeError",kind="bridge"}' in text
    assert "jmsbridge_operator_reconcile_duration_seconds_bucket" in text
    metrics.MetricsServer(port, "127.0.0.1").stop()  # the port is free again


class SlowKube:
    """Enough of the API for a reconciliation of a missing bridge; the first read blocks until released."""

    def __init__(self) -> None:
        self.gets = 0
        self.entered = threading.Event()
        self.release = threading.Event()

    def get(self, resource: Any, namespace: str, name: str) -> None:
        self.gets += 1
        self.entered.set()
        self.release.wait(timeout=10)
        return None


def test_requests_during_a_reconciliation_coalesce_into_one_more() -> None:
    kube = SlowKube()
    reconciler = Reconciler(kube, events=lambda *a, **k: None)  # type: ignore[arg-type]

    def no_routes(namespace: str, name: str) -> Sequence[Mapping[str, Any]]:
        return []

    first = threading.Thread(target=reconciler.reconcile, args=("apps", "b", no_routes))
    first.start()
    assert kube.entered.wait(timeout=10)
    for _ in range(5):  # all of these only mark the running reconciliation dirty
        reconciler.reconcile("apps", "b", no_routes)
    kube.release.set()
    first.join(timeout=10)
    assert kube.gets == 2  # the running one, then exactly one more
    reconciler.reconcile("apps", "b", no_routes)
    assert kube.gets == 3
