"""A standby pair's status follows its Lease, written by two real jobs fighting for it: the real kopf
operator on the API emulator, the real job processes (`jmsbridge job`, local Spark, real ActiveMQ and
noida-db).

No spark-operator runs here: the test plays it by patching `status.applicationState` of the
SparkApplications the operator created (both RUNNING). The same status with the Lease written by the test:
tests/operator/test_lease_in_status.py.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jmsbridge.local import BridgeJob
from tests.brokers import ActiveMqBroker, KafkaBroker
from tests.kubeapi.client import KubeApi
from tests.kubeapi.operator_runner import run_operator
from tests.operator.fixtures import OPERATOR_MODULE
from tests.operator.helpers import NAMESPACE, STANDBY, claim
from tests.operator.test_lease_in_status import NO_ACTIVE, both_running, failover_events
from tests.operator.test_operator import View
from tests.support.harness import ONE_AT_A_TIME, bridge_document, route_document, write_yaml

pytestmark = [pytest.mark.e2e, ONE_AT_A_TIME]


@pytest.fixture()
def jobs() -> Iterator[list[BridgeJob]]:
    started: list[BridgeJob] = []
    yield started
    for job in started:
        job.kill()


@pytest.mark.timeout(900)
def test_the_status_follows_two_real_jobs_fighting_for_the_lease(
    cluster: KubeApi,
    no_kafka_checks: None,
    activemq: ActiveMqBroker,
    kafka: KafkaBroker,
    tmp_path: Path,
    jobs: list[BridgeJob],
) -> None:
    n = uuid.uuid4().hex[:8]
    name, topic = f"pair-{n}", f"pair-{n}"
    kafka.create_topics(topic)
    bridge = bridge_document(name, activemq, kafka, [{"queue": f"pair.{n}"}])
    bridge["metadata"]["namespace"] = NAMESPACE
    bridge["spec"]["failover"] = {"standby": True, "leaseDurationSeconds": 4}
    route = route_document("all", name, topic)
    route["metadata"]["namespace"] = NAMESPACE
    files = [write_yaml(tmp_path / "bridge.yaml", bridge), write_yaml(tmp_path / "routes.yaml", route)]
    # In the cluster, both instances mount the claim; here they share `tmp_path/checkpoint`.
    resource = {
        **bridge,
        "spec": {**bridge["spec"], "spark": {**bridge["spec"]["spark"], **STANDBY["spark"]}},
    }

    view = View(cluster)

    def job(instance: str) -> BridgeJob:
        started = BridgeJob(
            files, tmp_path, instance=instance, master="local[1]", env={"HOSTNAME": f"pod-{instance}"}
        )
        jobs.append(started.start())
        return started

    def status() -> dict[str, Any]:
        return dict((view.bridge(name) or {}).get("status") or {})

    def active(application: str | None, failovers: int) -> dict[str, Any] | None:
        now = status()
        return now if (now.get("activeInstance"), now.get("failovers")) == (application, failovers) else None

    with run_operator(cluster, OPERATOR_MODULE):
        view.create(resource, claim())
        both_running(view, name)  # the spark-operator's part: both drivers run
        primary = job("primary")
        now = view.wait(lambda: active(f"{name}-primary", 0), "the primary active", timeout=240)
        assert now["leaseHolder"] == "primary/pod-primary"
        assert view.conditions(view.bridge(name)) == {"Ready": ("True", "Running")}
        secondary = job("secondary")

        # A clean stop releases the Lease: the secondary takes over at its next poll.
        assert primary.process is not None
        primary.process.send_signal(signal.SIGTERM)
        assert primary.wait_exit(120) == 0
        now = view.wait(lambda: active(f"{name}-secondary", 1), "the secondary active", timeout=240)
        assert now["lastFailoverTime"]
        events = view.wait(lambda: failover_events(view, name), "a Failover Event")
        assert (
            f"primary/pod-primary -> secondary/pod-secondary ({name}-primary -> {name}-secondary)"
            in events[0]
        )

        # Kubernetes restarts the stopped instance: it stands by. A crash of the active one (SIGKILL of
        # its process group) leaves the Lease to run out; the primary takes over once it has seen the
        # Lease unrenewed for its duration (or once it is up, if its start takes longer).
        primary = job("primary")
        secondary.kill()
        view.wait(lambda: active(f"{name}-primary", 2), "the primary active again", timeout=240)
        view.wait(lambda: len(failover_events(view, name)) == 2, "a second Failover Event")
        events = failover_events(view, name)
        assert any("secondary/pod-secondary -> primary/pod-primary" in event for event in events)

        # The last instance crashes too, and the applications still say RUNNING: nobody is active.
        primary.kill()
        bridge = view.wait_conditions("JmsBridge", name, NO_ACTIVE)
        assert "was last renewed by primary/pod-primary" in view.message(bridge)
        assert bridge["status"]["failovers"] == 2
