"""Two bridge jobs as an active/standby pair over a Kubernetes Lease on the API emulator, with real
brokers: the standby takes over when the active stops cleanly, and a job that lost the lease exits.

The election itself, without Spark or brokers: tests/kube/test_leadership.py.
"""

from __future__ import annotations

import signal
import uuid
from pathlib import Path
from typing import Any

import pytest

from bridge_job.config import lease_name
from bridge_job.kube.leadership import EXIT_LEADERSHIP_LOST
from bridge_job.message import Destination, DestinationKind, JmsMessage
from jmsbridge.local import BridgeJob
from tests.brokers import ActiveMqBroker, KafkaBroker
from tests.kubeapi.client import KubeApi
from tests.support.harness import (
    ONE_AT_A_TIME,
    bridge_document,
    read_topics,
    route_document,
    send,
    write_yaml,
)

pytestmark = [pytest.mark.e2e, ONE_AT_A_TIME]

LEASES = "coordination.k8s.io/v1"
NAMESPACE = "apps"


def test_two_jobs_run_as_an_active_standby_pair(
    kube_api: KubeApi, activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    n = uuid.uuid4().hex[:8]
    name, source, topic = f"pair-{n}", f"pair.{n}", f"pair-{n}"
    kafka.create_topics(topic)
    bridge = bridge_document(name, activemq, kafka, [{"queue": source}])
    bridge["spec"]["failover"] = {"standby": True, "leaseDurationSeconds": 4}
    route = route_document("all", name, topic)
    for document in (bridge, route):
        document["metadata"]["namespace"] = NAMESPACE
    files = [write_yaml(tmp_path / "bridge.yaml", bridge), write_yaml(tmp_path / "routes.yaml", route)]
    destination = Destination(DestinationKind.QUEUE, source)

    def messages(first: int) -> list[JmsMessage]:
        return [JmsMessage(destination, body=f"message {i}") for i in range(first, first + 10)]

    def instance(name: str) -> BridgeJob:
        return BridgeJob(files, tmp_path, instance=name, master="local[1]", env={"HOSTNAME": f"pod-{name}"})

    a = instance("a").start()
    b: BridgeJob | None = None
    try:
        a.wait_running(180)
        b = instance("b").start()
        b.wait_log("standby: waiting for lease", 180)
        assert "standby: warm (" in b.log()  # before it holds the lease
        send(activemq, messages(0))
        assert len(read_topics(kafka, [topic], 10)) == 10
        a.wait_log(" batch {")  # the active's first interval returned its tasks' rows
        assert " running: " not in b.log()
        assert " batch {" not in b.log()  # the standby ran no query: not one record moved
        assert lease_spec_of(kube_api, name)["holderIdentity"] == "a/pod-a"

        assert a.process is not None
        a.process.send_signal(signal.SIGTERM)  # a clean stop releases the lease: b takes over at once
        assert a.wait_exit(120) == 0
        b.wait_running(120)
        assert lease_spec_of(kube_api, name)["holderIdentity"] == "b/pod-b"
        send(activemq, messages(10))
        assert len(read_topics(kafka, [topic], 20)) == 20

        kube_api.patch(
            LEASES, "Lease", lease_name(name), NAMESPACE, {"spec": {"holderIdentity": "thief/pod"}}
        )
        assert b.wait_exit(120) == EXIT_LEADERSHIP_LOST
        assert "lost the lease" in b.log()
    finally:
        a.kill()
        if b is not None:
            b.kill()


def lease_spec_of(kube: KubeApi, bridge_id: str) -> dict[str, Any]:
    lease = kube.get(LEASES, "Lease", lease_name(bridge_id), NAMESPACE)
    assert lease is not None
    spec: dict[str, Any] = lease["spec"]
    return spec
