"""Operator replicas with `--leader-election`, each `jmsbridge operator` as a process over HTTP against the
real API server: the holder of the Lease reconciles, the other stands by and answers its probes, takes over
at once when the holder stops cleanly, and a holder that loses its lease stops (exit 3)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import kopf
import pytest
from jmsbridge_operator.election import ENV_NAMESPACE, LEASE_NAME, Election, ElectionError, acquire
from jmsbridge_operator.handlers.pauses import pause
from kopf._cogs.aiokits.aioenums import FlagSetter  # kopf makes daemon stoppers only internally
from kopf._core.intents.stoppers import DaemonStoppingReason

from bridge_job.kube.api import ApiError
from bridge_job.kube.leadership import EXIT_LEADERSHIP_LOST, Leadership
from testbed.apiserver.client import KubeApi
from testbed.brokers import free_port
from testbed.resources import NAMESPACE, simple_bridge
from tests.kube.test_leadership import Forbidden
from tests.operator.fixtures import KAFKA_CHECKS_ENV
from tests.operator.helpers import SPARK_VERSION, route

pytestmark = pytest.mark.timeout(180)

OPERATOR_NAMESPACE = "ops"
LEASE_SECONDS = 3
HANDLED = "Handler 'bridge_created' succeeded"  # kopf's log line for a handled bridge


@dataclass
class Replica:
    name: str
    process: subprocess.Popen[bytes]
    port: int
    metrics_port: int
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def probe(self) -> str | None:
        """The body of its liveness endpoint, None while it does not answer."""
        return get(self.port, "/healthz")

    def metrics(self) -> str | None:
        return get(self.metrics_port, "/metrics")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)


@pytest.fixture()
def replicas(cluster: KubeApi, tmp_path: Path) -> Iterator[list[Replica]]:
    cluster.ensure_namespace(OPERATOR_NAMESPACE)
    started: list[Replica] = []
    yield started
    for replica in started:
        replica.stop()


def start(replicas: list[Replica], cluster: KubeApi, tmp_path: Path, name: str) -> Replica:
    """A replica as the chart's Deployment runs it: pod name in HOSTNAME, namespace in POD_NAMESPACE."""
    port, metrics_port = free_port(), free_port()
    env = os.environ | {
        "KUBECONFIG": str(cluster.kubeconfig),
        "HOSTNAME": name,
        ENV_NAMESPACE: OPERATOR_NAMESPACE,
    }
    env[KAFKA_CHECKS_ENV] = "false"  # `kafka:9092` does not exist here
    env.pop("KUBERNETES_SERVICE_HOST", None)
    command = [sys.executable, "-m", "jmsbridge", "operator", "--all-namespaces", "--leader-election"]
    command += [
        f"--leader-election-lease-seconds={LEASE_SECONDS}",
        f"--liveness=http://127.0.0.1:{port}/healthz",
        f"--metrics-port={metrics_port}",
        "--metrics-address=127.0.0.1",
    ]
    log_path = tmp_path / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    replica = Replica(name, process, port, metrics_port, log_path)
    replicas.append(replica)
    return replica


def get(port: int, path: str) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return str(response.read().decode())
    except (urllib.error.URLError, ConnectionError):
        return None


def holder(cluster: KubeApi) -> str | None:
    lease = cluster.get("coordination.k8s.io/v1", "Lease", LEASE_NAME, OPERATOR_NAMESPACE)
    return None if lease is None else (lease.get("spec") or {}).get("holderIdentity")


def applications(cluster: KubeApi) -> set[str]:
    return {a["metadata"]["name"] for a in cluster.list(SPARK_VERSION, "SparkApplication", NAMESPACE)}


def leading(cluster: KubeApi, replica: Replica) -> bool:
    assert replica.process.poll() is None, replica.log()
    return holder(cluster) == replica.name and replica.probe() not in (None, "standby\n")


@pytest.mark.slow
def test_one_replica_reconciles_the_other_stands_by_then_takes_over(
    cluster: KubeApi, replicas: list[Replica], tmp_path: Path
) -> None:
    first = start(replicas, cluster, tmp_path, "operator-a")
    cluster.wait_for(lambda: leading(cluster, first), timeout=60, what="operator-a to lead")
    second = start(replicas, cluster, tmp_path, "operator-b")
    cluster.wait_for(lambda: second.probe() == "standby\n", timeout=60, what="operator-b's standby probe")

    cluster.create(simple_bridge("first"))
    cluster.create(route("out", bridge_name="first"))
    cluster.wait_for(lambda: "first-primary" in applications(cluster), what="first's application")
    cluster.wait_for(lambda: HANDLED in first.log(), what="operator-a's handler")
    assert holder(cluster) == "operator-a" and second.probe() == "standby\n"
    assert HANDLED not in second.log()  # the standby runs no handler at all
    assert "jmsbridge_operator_reconciles_total" in (second.metrics() or "")  # its scrape target is up

    assert first.stop() == 0  # a clean stop releases the lease: no wait for it to run out
    cluster.wait_for(lambda: leading(cluster, second), timeout=LEASE_SECONDS, what="operator-b to take over")
    cluster.create(simple_bridge("second"))
    cluster.wait_for(lambda: "second-primary" in applications(cluster), what="second's application")
    assert HANDLED in second.log()
    assert re.search(r'jmsbridge_operator_reconciles_total\{[^}]*result="ok"\} [1-9]', second.metrics() or "")


def test_a_daemon_kopf_never_stops_leaves_its_shutdown_no_error() -> None:
    """kopf may start a daemon as it stops (an event in flight) and never set its `stopped`: the daemon's
    pause runs out while kopf's shutdown waits for leftover tasks, and an error any of them ended with
    would make the clean stop exit 1 (as `stopped.wait(seconds)` did, with its TimeoutError)."""

    async def shutdown() -> None:
        existing = asyncio.all_tasks()
        never_stopped = FlagSetter[DaemonStoppingReason]().async_waiter
        late_daemon = asyncio.create_task(pause(never_stopped, 0.01))
        root = asyncio.create_task(asyncio.sleep(0))  # the operator's root tasks end at once
        await kopf.run_tasks([root], ignored=existing)
        assert late_daemon.done()

    asyncio.run(shutdown())


def test_a_replica_that_loses_its_lease_stops(
    cluster: KubeApi, replicas: list[Replica], tmp_path: Path
) -> None:
    replica = start(replicas, cluster, tmp_path, "operator-a")
    cluster.wait_for(lambda: leading(cluster, replica), timeout=60, what="operator-a to lead")

    # Another replica took it (a partition healed, say). A merge patch, not a read and a PUT: the replica
    # renews every second, and a PUT of what was read before a renewal is refused as a conflict.
    taken = {"spec": {"holderIdentity": "operator-z"}}
    cluster.patch("coordination.k8s.io/v1", "Lease", LEASE_NAME, OPERATOR_NAMESPACE, taken)

    assert replica.process.wait(timeout=30) == EXIT_LEADERSHIP_LOST
    assert "lost the lease" in replica.log()


def test_the_lease_needs_a_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_NAMESPACE, raising=False)
    with pytest.raises(ElectionError, match="--leader-election-namespace or set POD_NAMESPACE"):
        Election.of(None, None, None)
    monkeypatch.setenv(ENV_NAMESPACE, "ops")
    assert Election.of(None, None, None).where == f"ops/{LEASE_NAME}"
    assert Election.of("other", "mine", 30) == Election(
        "other", "mine", 30, Election.of(None, None, None).identity
    )


def test_a_replica_without_rights_on_leases_says_which_it_needs() -> None:
    store = Forbidden()  # answers 403, as the API server does without the chart's Role
    election = Election(store.namespace, store.name, LEASE_SECONDS, "operator-a")
    leadership = Leadership(store, election.identity, election.lease_seconds)
    with pytest.raises(ElectionError) as raised:
        acquire(leadership, election, threading.Event())
    assert str(raised.value) == (
        f"cannot take the lease {election.where}: {store.error}; the operator's service account needs get, "
        f"create and update on leases in namespace {store.namespace} (the chart's Role grants them)"
    )


def test_the_servers_whole_answer_comes_before_the_operators_hint() -> None:
    """An answer that holds "; " itself stays whole: the job hands its cause apart from its hint
    (LeaseRefused); nothing cuts the text where the hint used to begin."""
    store = Forbidden()
    store.error = ApiError(403, "Forbidden", 'leases "x" is forbidden; RBAC: clusterrole "jb" not found')
    election = Election(store.namespace, store.name, LEASE_SECONDS, "operator-a")
    with pytest.raises(ElectionError) as raised:
        acquire(Leadership(store, election.identity, election.lease_seconds), election, threading.Event())
    cause = f"cannot take the lease {election.where}: {store.error}"
    assert str(raised.value).startswith(f"{cause}; the operator's service account needs")
    assert "the job's service account" not in str(raised.value)
