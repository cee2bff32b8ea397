"""The Kubernetes API unreachable for longer than the Lease, with an active and a standby running.

Both jobs reach the real API server, as the chart's job ServiceAccount, through the tests' fault proxy
(tests/support/fault_proxy.py), which
blackholes it (a partition: requests time out) for three lease durations. The active cannot renew its
Lease and gives its role up (exit `EXIT_LEADERSHIP_LOST`; Kubernetes would start it again as the
standby); the standby cannot take a Lease it cannot write, so it never moves a record meanwhile. Once the
API answers again the standby takes the Lease and what was sent during the outage arrives, once
(`exactlyOnce`).

The same partition while a new active still waits for its JMS broker (its queries already resumed):
it gives its role up as soon as its Lease is gone, not after its JMS patience.

What this does not show yet (docs/outages.md): an active that keeps its role across the outage without a
restart.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from bridge_job.kube.leadership import EXIT_LEADERSHIP_LOST
from bridge_job.message import Destination, DestinationKind, JmsMessage, Property
from jmsbridge.local import BridgeJob, free_port
from testbed.apiserver.chart import job_kubeconfig
from testbed.apiserver.client import KubeApi
from testbed.brokers import ActiveMqBroker, KafkaBroker
from testbed.harness import (
    ONE_AT_A_TIME,
    bridge_document,
    read_topics,
    route_document,
    send,
    write_yaml,
)
from tests.support.fault_proxy import FaultProxy

pytestmark = [pytest.mark.e2e, ONE_AT_A_TIME]

NAMESPACE = "apps"
LEASE_SECONDS = 4
RUNNING = " running: "
STANDING_BY = "standby: waiting for lease"


def _through_a_proxy(
    kube_api: KubeApi, bridge: dict[str, Any], route: dict[str, Any], tmp_path: Path
) -> tuple[list[Path], FaultProxy, Path]:
    """The bridge's files in `NAMESPACE`, a fault proxy before the API server, and the kubeconfig of the
    bridge's pods through it."""
    for document in (bridge, route):
        document["metadata"]["namespace"] = NAMESPACE
    files = [write_yaml(tmp_path / "bridge.yaml", bridge), write_yaml(tmp_path / "routes.yaml", route)]
    api = urlparse(kube_api.url)
    proxy = FaultProxy(api.hostname or "127.0.0.1", api.port or 80)
    name = bridge["metadata"]["name"]
    return files, proxy, job_kubeconfig(kube_api, NAMESPACE, server=f"https://{proxy.address}", bridge=name)


def test_the_api_unreachable_for_longer_than_the_lease_leaves_one_writer_and_loses_nothing(
    kube_api: KubeApi, as_bridge_job: Path, activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    n = uuid.uuid4().hex[:8]
    name, source, topic = f"kube-{n}", f"kube.{n}", f"kube-{n}"
    kafka.create_topics(topic)
    bridge = bridge_document(name, activemq, kafka, [{"queue": source}], delivery="exactlyOnce")
    bridge["spec"]["failover"] = {"standby": True, "leaseDurationSeconds": LEASE_SECONDS}
    route = route_document("all", name, topic, key={"property": "seq"})
    files, proxy, proxied = _through_a_proxy(kube_api, bridge, route, tmp_path)
    destination = Destination(DestinationKind.QUEUE, source)

    def messages(first: int, count: int) -> list[JmsMessage]:
        return [
            JmsMessage(destination, body=f"message {i}", properties={"seq": Property.of(i)})
            for i in range(first, first + count)
        ]

    def instance(name: str) -> BridgeJob:
        env = {"HOSTNAME": f"pod-{name}", "KUBECONFIG": str(proxied)}
        return BridgeJob(files, tmp_path, instance=name, master="local[1]", env=env)

    a, b = instance("a"), instance("b")
    try:
        a.start().wait_running(180)
        b.start().wait_log(STANDING_BY, 180)
        send(activemq, messages(0, 50))
        assert len(read_topics(kafka, [topic], 50)) == 50

        proxy.blackhole()
        cut = time.monotonic()
        assert a.wait_exit(60) == EXIT_LEADERSHIP_LOST  # it cannot renew: it gives its role up
        send(activemq, messages(50, 50))  # JMS and Kafka are fine, but nobody may move these yet
        # The outage lasts three lease durations: long enough for the standby to take over, were it
        # able to write the Lease. It must not.
        threading.Event().wait(max(0.0, 3 * LEASE_SECONDS - (time.monotonic() - cut)))
        assert RUNNING not in b.log(), "the standby took over without a Lease"
        proxy.heal()

        b.wait_running(180)  # the standby takes the Lease once it can write it
        records = read_topics(kafka, [topic], 100, timeout=240, settle=3.0)
    finally:
        proxy.close()
        a.kill()
        b.kill()
    keys = [r.key for r in records]
    assert sorted(int(key or b"-1") for key in set(keys)) == list(range(100)), "every message arrives"
    assert len(keys) == 100, f"{len(keys) - 100} duplicates despite exactlyOnce"


def test_a_lease_lost_while_the_active_waits_for_jms_at_its_start_stops_it_at_once(
    kube_api: KubeApi, as_bridge_job: Path, activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    """The job opens its queries' gate before its ingest connects to JMS, which may take the whole
    patience: a lease lost meanwhile must stop the queries and the job then, not once JMS answers."""
    n = uuid.uuid4().hex[:8]
    name, topic = f"start-{n}", f"start-{n}"
    kafka.create_topics(topic)
    bridge = bridge_document(name, activemq, kafka, [{"queue": f"start.{n}"}])
    nobody = f"tcp://127.0.0.1:{free_port()}"  # no JMS broker listens: the ingest waits out an outage
    bridge["spec"]["jms"]["connectionFactory"]["properties"]["brokerURL"] = nobody
    bridge["spec"]["failover"] = {"standby": True, "leaseDurationSeconds": LEASE_SECONDS}
    bridge["spec"]["outages"] = {"patienceSeconds": 600}
    files, proxy, proxied = _through_a_proxy(kube_api, bridge, route_document("all", name, topic), tmp_path)
    env = {"HOSTNAME": "pod-a", "KUBECONFIG": str(proxied)}
    job = BridgeJob(files, tmp_path, instance="a", master="local[1]", env=env)
    try:
        job.start().wait_log("active: holding lease", 180)
        job.wait_log("(attempt 1, failing for", 120)  # its ingest waits for JMS, its queries run
        proxy.blackhole()
        assert job.wait_exit(60) == EXIT_LEADERSHIP_LOST, job.log()[-3000:]
    finally:
        proxy.close()
        job.kill()
    assert "lost the lease" in job.log()
