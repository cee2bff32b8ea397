"""Two bridge jobs as an active/standby pair over a Kubernetes Lease on a real API server, with real
brokers: the standby takes over when the active stops cleanly, and a job that lost the lease exits.
Only the active subscribes to NATS; a NATS request in flight at the takeover gets no answer (its
requester times out, as docs/nats.md says), and the next one is answered by the new active. The real
kopf operator runs beside them: the bridge's status follows the Lease the two jobs write.

No spark-operator runs here: the test plays it by patching `status.applicationState` of the
SparkApplications the operator created (both RUNNING); in the cluster both instances mount the claim,
here they share `tmp_path/checkpoint`.

The election itself, without Spark or brokers: tests/kube/test_leadership.py; the status with the Lease
written by the test (a crashed active, nobody renewing): tests/operator/test_lease_in_status.py.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import uuid
from pathlib import Path
from typing import Any

import nats as nats_client
import pytest
from nats.errors import TimeoutError as NatsTimeout

from bridge_job.config import default_bridge_id, lease_name
from bridge_job.kube.leadership import EXIT_LEADERSHIP_LOST
from bridge_job.message import Destination, DestinationKind, JmsMessage
from jmsbridge.local import BridgeJob, wait_until
from testbed.apiserver.chart import job_kubeconfig
from testbed.apiserver.client import KubeApi
from testbed.brokers import ActiveMqBroker, KafkaBroker, NatsServer
from testbed.failover_scenario import group_gone
from testbed.harness import (
    ONE_AT_A_TIME,
    bridge_document,
    read_topics,
    route_document,
    send,
    write_yaml,
)
from testbed.resources import NAMESPACE, STANDBY
from tests.operator.fixtures import chart_operator
from tests.operator.helpers import claim
from tests.operator.test_lease_in_status import NO_ACTIVE, both_running, failover_events
from tests.operator.test_operator import View
from tests.support.jms_services import holding, serving

pytestmark = [pytest.mark.e2e, ONE_AT_A_TIME]

LEASES = "coordination.k8s.io/v1"


@pytest.mark.timeout(900)
def test_two_jobs_run_as_an_active_standby_pair(
    cluster: KubeApi,
    no_kafka_checks: None,
    activemq: ActiveMqBroker,
    kafka: KafkaBroker,
    nats: NatsServer,
    tmp_path: Path,
) -> None:
    n = uuid.uuid4().hex[:8]
    name, source, topic, service = f"pair-{n}", f"pair.{n}", f"pair-{n}", f"svc.{n}"
    bridge_id = default_bridge_id(NAMESPACE, name)  # its Lease's name
    kafka.create_topics(topic)
    bridge = bridge_document(name, activemq, kafka, [{"queue": source}], nats={"servers": [nats.url]})
    bridge["spec"]["failover"] = {"standby": True, "leaseDurationSeconds": 4}
    route = route_document("all", name, topic)
    requests = {"direction": "natsToJms", "natsSubject": service, "jmsDestination": {"queue": service}}
    nats_route = route_document("requests", name, "-", order=1, **requests)
    del nats_route["spec"]["kafkaTopic"]
    for document in (bridge, route, nats_route):
        document["metadata"]["namespace"] = NAMESPACE
    files = [
        write_yaml(tmp_path / "bridge.yaml", bridge),
        write_yaml(tmp_path / "routes.yaml", route, nats_route),
    ]
    destination = Destination(DestinationKind.QUEUE, source)
    resource = {
        **bridge,
        "spec": {**bridge["spec"], "spark": {**bridge["spec"]["spark"], **STANDBY["spark"]}},
    }
    view = View(cluster)

    def status() -> dict[str, Any]:
        return dict((view.bridge(name) or {}).get("status") or {})

    def active(instance: str, failovers: int) -> dict[str, Any] | None:
        now = status()
        wanted = (f"{name}-{instance}", failovers)
        return now if (now.get("activeInstance"), now.get("failovers")) == wanted else None

    def messages(first: int) -> list[JmsMessage]:
        return [JmsMessage(destination, body=f"message {i}") for i in range(first, first + 10)]

    def instance(name: str) -> BridgeJob:  # a task slot for the egress, one for the NATS service
        # as the bridge's own pods, whose identity the operator made (not the operator's, beside it)
        kubeconfig = job_kubeconfig(cluster, NAMESPACE, bridge=resource["metadata"]["name"], operator=True)
        env = {"HOSTNAME": f"pod-{name}", "KUBECONFIG": str(kubeconfig)}
        return BridgeJob(files, tmp_path, instance=name, master="local[2]", env=env)

    with chart_operator(cluster):
        view.create(resource, claim())
        both_running(view, name)  # the spark-operator's part: both drivers run
        a = instance("primary").start()
        b: BridgeJob | None = None
        try:
            a.wait_running(180)
            now = view.wait(lambda: active("primary", 0), "the primary active", timeout=240)
            assert now["leaseHolder"] == "primary/pod-primary"
            # the NATS probe reports its first round trip on its own clock, after the lease is taken
            view.wait_conditions(
                "JmsBridge", name, {"Ready": ("True", "Running"), "NatsConnected": ("True", "Connected")}
            )
            b = instance("secondary").start()
            b.wait_log("standby: waiting for lease", 180)
            assert "standby: warm (" in b.log()  # before it holds the lease
            send(activemq, messages(0))
            assert len(read_topics(kafka, [topic], 10)) == 10
            a.wait_log(" batch {")  # the active's first interval returned its tasks' rows
            assert " running: " not in b.log()
            assert " batch {" not in b.log()  # the standby ran no query: not one record moved
            a.wait_log("subscribed to NATS subject")
            with serving(activemq, service):
                assert nats_request(nats.url, service, "before", 60) == b"re: before"
            assert "subscribed to NATS subject" not in b.log()  # the standby takes no NATS message

            # A request the JMS service holds while the active goes: its answer finds no way back.
            in_flight: list[bytes | Exception] = []
            asking = threading.Thread(
                target=lambda: in_flight.append(nats_request(nats.url, service, "held", 20))
            )
            asking.start()
            with holding(activemq, service) as held:
                assert a.process is not None
                a.process.send_signal(signal.SIGTERM)  # a clean stop releases the lease: b takes over
                assert a.wait_exit(120) == 0
                b.wait_running(120)
                assert lease_spec_of(cluster, bridge_id)["holderIdentity"] == "secondary/pod-secondary"
                held.answer()
            asking.join(60)
            assert len(in_flight) == 1 and isinstance(in_flight[0], NatsTimeout), in_flight
            now = view.wait(lambda: active("secondary", 1), "the secondary active", timeout=240)
            assert now["lastFailoverTime"]
            events = view.wait(lambda: failover_events(view, name), "a Failover Event")
            assert (
                f"primary/pod-primary -> secondary/pod-secondary ({name}-primary -> {name}-secondary)"
                in events[0]
            )
            a.start()  # again, as Kubernetes would: the new standby (it warms up while b works)
            b.wait_log("subscribed to NATS subject")
            with serving(activemq, service):
                assert nats_request(nats.url, service, "after", 60) == b"re: after"
            send(activemq, messages(10))
            assert len(read_topics(kafka, [topic], 20)) == 20

            # a stands by with its queries held; asked to stop, it stops cleanly, and nothing it started
            # is left (a held query's planning process waits for the driver).
            a.wait_log("standby: waiting for lease", 180)
            assert "standby: warm (" in a.log() and " running: " not in a.log()
            assert a.process is not None
            group = a.process.pid
            a.process.send_signal(signal.SIGTERM)
            assert a.wait_exit(120) == 0
            assert "jmsbridge stopped" not in a.log() and "Traceback" not in a.log(), a.log()[-3000:]
            wait_until(lambda: group_gone(group), 60, "the stopped standby's processes to end", 0.2)

            thief = {"spec": {"holderIdentity": "thief/pod"}}
            cluster.patch(LEASES, "Lease", lease_name(bridge_id), NAMESPACE, thief)
            assert b.wait_exit(120) == EXIT_LEADERSHIP_LOST
            assert "lost the lease" in b.log()
            # Nobody renews the Lease now: no instance is active, whatever the applications say.
            stalled = view.wait_conditions("JmsBridge", name, NO_ACTIVE)
            assert "was last renewed by thief/pod" in view.message(stalled)
        finally:
            a.kill()
            if b is not None:
                b.kill()


def nats_request(url: str, subject: str, text: str, timeout: float) -> bytes | Exception:
    """The answer's data, or the exception the request ended in."""

    async def ask() -> bytes:
        client = await nats_client.connect(url)
        try:
            return (await client.request(subject, text.encode(), timeout=timeout)).data
        finally:
            await client.close()

    try:
        return asyncio.run(ask())
    except Exception as error:
        return error


def lease_spec_of(kube: KubeApi, bridge_id: str) -> dict[str, Any]:
    lease = kube.get(LEASES, "Lease", lease_name(bridge_id), NAMESPACE)
    assert lease is not None
    spec: dict[str, Any] = lease["spec"]
    return spec
