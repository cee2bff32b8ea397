"""The job's health report: outages of the ingest's sources, written to the bridge's health ConfigMap
on a real API server (the operator's side is tested in tests/operator)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bridge_job.faults.outages import Outage
from bridge_job.faults.stops import BridgeStopped
from bridge_job.kube.api import ApiError, Kube, Resource
from bridge_job.kube.health import CONNECTED, RECONNECTING, ConnectionHealth, HealthConfigMap, stops_reported
from testbed.apiserver.client import KubeApi
from testbed.brokers import wait_until
from testbed.builders import config

# As the bridge's pods: the chart's job ServiceAccount and Role, in `apps`.
pytestmark = pytest.mark.usefixtures("as_bridge_job")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_reconnecting_while_any_source_fails_then_connected() -> None:
    published: list[dict[str, Any]] = []
    health = ConnectionHealth(published.append, 300, "jms")
    clock = Clock()
    orders = Outage("JMS source orders", 300, clock, listener=health)
    audit = Outage("JMS source audit", 300, clock, listener=health)

    health.back("JMS")  # connected at start
    orders.failed(ConnectionError("broker tcp://jms:61616?jms.password=s3cret gone"))
    clock.now = 5
    orders.failed(ConnectionError("still gone"))  # the same outage: nothing new to say
    audit.failed(ConnectionError("gone too"))
    orders.clear()  # one source back, the other still failing
    audit.clear()

    assert [p["jms"]["state"] for p in published] == [CONNECTED, RECONNECTING, CONNECTED]
    reconnecting = published[1]["jms"]
    assert reconnecting["patienceSeconds"] == 300
    assert "gone" in reconnecting["error"] and "s3cret" not in reconnecting["error"]


def test_each_instance_writes_its_own_key_of_the_bridge_config_map(
    kube_api: KubeApi, as_bridge_job: Path
) -> None:
    job = config(name="orders")
    primary = HealthConfigMap(Kube.connect(), "apps", job.bridge_id, "primary")
    secondary = HealthConfigMap(Kube.connect(), "apps", job.bridge_id, "secondary")
    try:
        primary({"jms": {"state": RECONNECTING}})
        secondary({"jms": {"state": CONNECTED}})

        def reported() -> dict[str, Any] | None:
            found = kube_api.get("v1", "ConfigMap", f"{job.bridge_id}-jms-bridge-health", "apps")
            data = (found or {}).get("data") or {}
            documents = {k: json.loads(v) for k, v in data.items()}
            for document in documents.values():
                assert document.pop("updated")  # when, for the reader
            return documents if len(data) == 2 else None

        wait_until(lambda: reported() is not None, 30, "both instances' reports")
        assert reported() == {
            "primary": {"jms": {"state": RECONNECTING}},
            "secondary": {"jms": {"state": CONNECTED}},
        }
        primary({"jms": {"state": CONNECTED}})
        wait_until(lambda: (reported() or {}).get("primary") == {"jms": {"state": CONNECTED}}, 30, "update")
        # another section of the same instance's document leaves the JMS state as it was
        primary({"checkpointReset": {"id": "r1", "to": "latest", "summary": "skips 3"}})
        both = {
            "jms": {"state": CONNECTED},
            "checkpointReset": {"id": "r1", "to": "latest", "summary": "skips 3"},
        }
        wait_until(lambda: (reported() or {}).get("primary") == both, 30, "the reset beside the JMS state")
    finally:
        primary.stop()
        secondary.stop()


def test_a_stop_with_a_status_reason_is_reported_before_the_job_exits(kube_api: KubeApi) -> None:
    job = config(name="orders")  # the bridge the RBAC of `as_bridge_job` is for
    report = HealthConfigMap(Kube.connect(), "apps", job.bridge_id, "primary")
    refused = BridgeStopped("the JMS broker refused the bridge's login (...): fix the Secret", "JmsRefused")
    try:
        with pytest.raises(BridgeStopped), stops_reported(report):
            raise refused
        with pytest.raises(BridgeStopped), stops_reported(report):
            raise BridgeStopped("a hard failure the operator has no reason of its own for")
    finally:
        report.stop()
    found = kube_api.get("v1", "ConfigMap", f"{job.bridge_id}-jms-bridge-health", "apps")
    document = json.loads(((found or {}).get("data") or {}).get("primary", "{}"))
    assert document.get("stopped") == {"reason": "JmsRefused", "message": refused.reason}


def test_no_report_outside_a_cluster() -> None:
    assert HealthConfigMap.for_job(config(name="orders"), "a") is None


def test_a_field_the_server_does_not_know_is_refused_not_dropped(kube_api: KubeApi) -> None:
    """What the job and the operator write goes with `fieldValidation=Strict`: a field the server's schema
    lacks is a 400 naming it, not an object stored without it."""
    kube = Kube.connect()
    configmaps = Resource("", "v1", "configmaps")
    with pytest.raises(ApiError, match=r'unknown field "dataa"') as refused:
        kube.create(configmaps, "apps", {"metadata": {"name": "typo"}, "dataa": {"k": "v"}})
    assert refused.value.status == 400
    assert kube_api.get("v1", "ConfigMap", "typo", "apps") is None
