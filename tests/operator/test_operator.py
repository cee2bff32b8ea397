"""The operator end to end: real kopf, real HTTP, against a real Kubernetes API server.

No spark-operator runs here: the tests play it by patching `status.applicationState` of the
SparkApplications the operator created, and watch the bridge's status follow. Where a standby pair's
jobs would elect their active instance, the tests write the Lease as the jobs would (`View.play_lease`);
`test_lease_in_status.py` runs the real jobs.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from jmsbridge_operator.config_files import file_of
from jmsbridge_operator.options import ENV_JOB_IMAGE
from jmsbridge_operator.reconciler import Reconciler
from prometheus_client import REGISTRY

from bridge_job.config import JobConfig
from bridge_job.config.loading import WatchedConfig
from bridge_job.kube.health import ConnectionHealth, HealthConfigMap
from testbed.apiserver.chart import job_client
from testbed.apiserver.client import KubeApi, KubeApiError
from testbed.apiserver.spark_crd import spark_crd_file
from testbed.resources import GROUP_VERSION, NAMESPACE, held_lease, simple_bridge
from tests.operator.fixtures import (
    KAFKA_CHECKS_ENV,
    OPERATOR_MODULE,
    chart_operator,
    without_validation_rules,
)
from tests.operator.helpers import (
    EXAMPLES,
    REPO,
    SPARK_VERSION,
    default_id,
    example,
    load_yaml,
    route,
    schema_errors,
)

pytestmark = pytest.mark.timeout(120)


# Conditions most tests leave aside: a standby pair's (`test_lease_in_status.py` is about them) and the
# job's JMS health report (one test below).
STANDBY_CONDITIONS = frozenset({"ActiveInstance", "CheckpointShared", "JmsConnected", "KafkaConnected"})
LEASES = "coordination.k8s.io/v1"


class View:
    """Reads and plays the spark-operator (and the jobs' Lease) on the emulated cluster, in `apps`."""

    def __init__(self, kube: KubeApi) -> None:
        self.kube = kube

    def create(self, *objects: dict[str, Any]) -> None:
        for obj in objects:
            self.kube.create(obj)

    def bridge(self, name: str) -> dict[str, Any] | None:
        return self.kube.get(GROUP_VERSION, "JmsBridge", name, NAMESPACE)

    def route(self, name: str) -> dict[str, Any] | None:
        return self.kube.get(GROUP_VERSION, "JmsBridgeRoute", name, NAMESPACE)

    def apps(self) -> dict[str, dict[str, Any]]:
        items = self.kube.list(SPARK_VERSION, "SparkApplication", NAMESPACE)
        return {a["metadata"]["name"]: a for a in items}

    def config_map(self, bridge: str) -> dict[str, Any] | None:
        return self.kube.get("v1", "ConfigMap", f"{bridge}-config", NAMESPACE)

    def job_config(self, bridge: str, instance: str = "primary") -> JobConfig | None:
        """The config the instance's job reads: the file its SparkApplication names (`--config`), or
        the ConfigMap's only file before there is one."""
        config_map = self.config_map(bridge)
        if config_map is None:
            return None
        data = config_map["data"]
        app = self.apps().get(f"{bridge}-{instance}")
        key = file_of(app) if app is not None else None
        if key is None:
            (key,) = data
        return JobConfig.model_validate(yaml.safe_load(data[key])) if key in data else None

    def mount(self, bridge: str, directory: Path, instance: str = "primary") -> Path:
        """Project the bridge's ConfigMap into `directory` as the kubelet does for a pod (every file
        written again), and return the file the instance's job reads (`--config`)."""
        config_map, key = self.config_map(bridge), file_of(self.apps()[f"{bridge}-{instance}"])
        assert config_map is not None and key is not None
        directory.mkdir(exist_ok=True)
        for stale in directory.iterdir():
            stale.unlink()
        for name, text in config_map["data"].items():
            (directory / name).write_text(text)
        return directory / key

    def routes_in_config(self, bridge: str) -> list[str] | None:
        config = self.job_config(bridge)
        return None if config is None else [r.name for r in config.routes]

    @staticmethod
    def conditions(obj: dict[str, Any] | None, every: bool = False) -> dict[str, tuple[str, str]]:
        status = (obj or {}).get("status") or {}
        conditions = status.get("conditions") or []
        return {
            c["type"]: (c["status"], c["reason"])
            for c in conditions
            if every or c["type"] not in STANDBY_CONDITIONS
        }

    def play_lease(
        self, bridge: str, holder: str | None, transitions: int = 0, duration: int = 300
    ) -> dict[str, Any]:
        """Write the Lease of the bridge named `bridge` as its jobs would (`helpers.held_lease`)."""
        lease = held_lease(default_id(bridge), holder, transitions, duration)
        name = lease["metadata"]["name"]
        if self.kube.get(LEASES, "Lease", name, NAMESPACE) is None:
            try:
                return self.kube.create(lease)
            except KubeApiError as error:  # the operator made it (free) meanwhile
                if error.status != 409:
                    raise
        return self.kube.patch(
            LEASES, "Lease", name, NAMESPACE, {"spec": {"holderIdentity": None, **lease["spec"]}}
        )

    @staticmethod
    def message(obj: dict[str, Any] | None, type_: str = "Ready") -> str:
        for condition in ((obj or {}).get("status") or {}).get("conditions") or []:
            if condition["type"] == type_:
                return str(condition.get("message"))
        return ""

    def play_spark(self, app: str, state: str, error: str | None = None, attempts: int | None = None) -> None:
        """Set the state (and the counters) the spark-operator would write."""
        app_state: dict[str, Any] = {"state": state}
        if error:
            app_state["errorMessage"] = error
        # driverInfo: required by the spark-operator's CRD, and always written by it.
        status: dict[str, Any] = {"applicationState": app_state, "driverInfo": {}}
        if attempts is not None:
            status |= {
                "executionAttempts": attempts,
                "submissionAttempts": attempts,
                "lastSubmissionAttemptTime": f"2026-01-01T00:00:{attempts:02d}Z",
                "submissionID": f"{app}-submission-{attempts}",
            }
        self.kube.patch_status(SPARK_VERSION, "SparkApplication", app, NAMESPACE, status)

    def events(self) -> list[tuple[str, str, str]]:
        items = self.kube.list("v1", "Event", NAMESPACE)
        return [(e["involvedObject"]["name"], e["type"], e["reason"]) for e in items]

    def event_messages(self, reason: str) -> list[str]:
        """The messages of the Events of `reason`; kopf posts them in the background, so wait for them."""
        return [e["message"] for e in self.kube.list("v1", "Event", NAMESPACE) if e["reason"] == reason]

    def ready_gauge(self, name: str) -> float | None:
        """The operator's `jmsbridge_operator_bridge_ready` of a bridge (it runs in this process)."""
        samples = [
            sample
            for family in REGISTRY.collect()
            if family.name == "jmsbridge_operator_bridge_ready"
            for sample in family.samples
            if sample.labels["bridge_namespace"] == NAMESPACE and sample.labels["bridge"] == name
        ]
        assert len(samples) <= 1, samples  # one series per bridge, labelled with its reason
        # and with the id the jobs' metrics call it by, which the alerts join on
        assert all(sample.labels["bridge_id"] == default_id(name) for sample in samples), samples
        return samples[0].value if samples else None

    def wait(self, condition: Callable[[], Any], what: str, timeout: float = 30) -> Any:
        return self.kube.wait_for(condition, timeout=timeout, what=what)

    def wait_conditions(self, kind: str, name: str, expected: dict[str, tuple[str, str]]) -> dict[str, Any]:
        get = self.bridge if kind == "JmsBridge" else self.route

        def matches() -> dict[str, Any] | None:
            obj = get(name)
            return obj if obj is not None and self.conditions(obj) == expected else None

        try:
            result: dict[str, Any] = self.wait(matches, f"{kind} {name} conditions {expected}")
        except AssertionError as error:
            raise AssertionError(f"{error}; now: {self.conditions(get(name))}") from None
        return result


@pytest.fixture()
def view(operator: KubeApi) -> View:
    return View(operator)


STARTING = {"Ready": ("False", "Starting"), "Reconciling": ("True", "Starting")}
STANDBY_STARTING = {"Ready": ("True", "Running"), "Reconciling": ("True", "StandbyStarting")}
AWAITING_LEASE = {"Ready": ("False", "AwaitingLease"), "Reconciling": ("True", "AwaitingLease")}
PRIMARY, SECONDARY = "primary/simple-primary-driver", "secondary/simple-secondary-driver"
ACCEPTED = {"Accepted": ("True", "Accepted"), "Ready": ("True", "InEffect")}


def rejected(reason: str) -> dict[str, tuple[str, str]]:
    return {"Accepted": ("False", reason), "Ready": ("False", reason), "Stalled": ("True", reason)}


RUNNING = {"Ready": ("True", "Running")}
FAILED = {"Ready": ("False", "ApplicationFailed"), "Stalled": ("True", "ApplicationFailed")}
RESTARTING = {"Ready": ("False", "ApplicationRestarting"), "Reconciling": ("True", "ApplicationRestarting")}


def apply_examples(view: View) -> None:
    for file in ("secrets.yaml", "bridge.yaml", "routes.yaml"):
        view.create(*load_yaml(EXAMPLES / file))


# ---------------------------------------------------------------------------------------------------


def test_bridge_and_routes_become_config_and_applications(view: View) -> None:
    apply_examples(view)
    apps = view.wait(lambda: (a := view.apps()) and len(a) == 2 and a, "two SparkApplications")
    assert sorted(apps) == ["orders-primary", "orders-secondary"]
    in_order = ["confirmations-to-jms", "orders-to-kafka", "prices-to-kafka"]
    view.wait(lambda: view.routes_in_config("orders") == in_order, "3 routes in the config")
    bridge = view.wait_conditions("JmsBridge", "orders", STARTING)
    status = bridge["status"]
    assert status["observedGeneration"] == bridge["metadata"]["generation"]
    assert status["routeCount"] == 3 and status["configMap"] == "orders-config"
    assert [(i["name"], i["state"]) for i in status["instances"]] == [
        ("primary", "NEW"),
        ("secondary", "NEW"),
    ]

    spark_crd = spark_crd_file()  # the models' CRD (the upstream file: test_render's cross-check)
    for app in view.apps().values():
        assert schema_errors(spark_crd, app, "v1beta2") == [], app["metadata"]["name"]
        owner = app["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["uid"]) == (
            "JmsBridge",
            "orders",
            bridge["metadata"]["uid"],
        )
    config = view.job_config("orders")
    assert config is not None and config.bridge_id == "apps-orders"  # <namespace>-<name>

    for name in ("orders-to-kafka", "prices-to-kafka", "confirmations-to-jms"):
        view.wait_conditions(
            "JmsBridgeRoute", name, {"Accepted": ("True", "Accepted"), "Ready": ("True", "InEffect")}
        )

    # kopf's bookkeeping: our finalizer, our annotation prefix, nothing in status.
    stored = view.bridge("orders")
    assert stored is not None
    assert stored["metadata"]["finalizers"] == ["jmsbridge.dev/finalizer"]
    assert all(key.startswith("jmsbridge.dev/") for key in stored["metadata"].get("annotations", {}))
    assert "kopf" not in json.dumps(stored["status"])
    events = view.events()
    assert ("orders", "Normal", "ApplicationCreated") in events
    assert ("orders", "Normal", "ConfigCreated") in events
    # From the operator, as `kubectl describe` shows it (not "kopf").
    sources = {
        (e["source"]["component"], e["reportingComponent"]) for e in view.kube.list("v1", "Event", NAMESPACE)
    }
    assert sources == {("jmsbridge-operator", "jmsbridge-operator")}


def test_status_follows_the_application(view: View) -> None:
    view.create(simple_bridge(), route("out"))
    view.wait(lambda: "simple-primary" in view.apps(), "the SparkApplication")
    view.wait_conditions("JmsBridge", "simple", STARTING)

    view.play_spark("simple-primary", "SUBMITTED")
    view.wait(lambda: "is SUBMITTED" in view.message(view.bridge("simple")), "SUBMITTED in the message")
    assert view.conditions(view.bridge("simple")) == STARTING

    assert view.ready_gauge("simple") == 0  # what jmsbridge_operator_bridge_ready says
    view.play_spark("simple-primary", "RUNNING")
    bridge = view.wait_conditions("JmsBridge", "simple", RUNNING)
    view.wait(lambda: view.ready_gauge("simple") == 1, "jmsbridge_operator_bridge_ready at 1")
    assert bridge["status"]["activeInstance"] == "simple-primary"
    assert view.message(bridge) == "Running with 1 route: simple-primary active."
    assert "failovers" not in bridge["status"]  # one instance never fails over

    # restartPolicy Always: the spark-operator resubmits it, so the bridge is on its way back, not stalled.
    view.play_spark("simple-primary", "FAILED", "Job aborted: KafkaException: _MSG_TIMED_OUT", attempts=1)
    bridge = view.wait_conditions("JmsBridge", "simple", RESTARTING)
    assert view.message(bridge, "Reconciling") == (
        "SparkApplication simple-primary is FAILED: Job aborted: KafkaException: _MSG_TIMED_OUT; the "
        "spark-operator restarts it (failure 1 of 3 before the bridge stalls)."
    )
    assert "activeInstance" not in bridge["status"]
    instance = bridge["status"]["instances"][0]
    assert (instance["attempts"], instance["startTime"], instance["failures"]) == (
        1,
        "2026-01-01T00:00:01Z",
        1,
    )
    view.wait(lambda: ("simple", "Warning", "ApplicationRestarting") in view.events(), "a Warning Event")

    view.play_spark("simple-primary", "PENDING_RERUN", attempts=1)
    view.wait_conditions("JmsBridge", "simple", STARTING)
    view.play_spark("simple-primary", "RUNNING", attempts=2)
    view.wait_conditions("JmsBridge", "simple", RUNNING)
    assert view.apps()["simple-primary"]["metadata"]["generation"] == 1  # never touched by us

    # The same failure again and again: restarting does not cure it, a person must look.
    view.play_spark("simple-primary", "FAILED", "Job aborted: KafkaException: _MSG_TIMED_OUT", attempts=2)
    bridge = view.wait_conditions("JmsBridge", "simple", RESTARTING)
    assert bridge["status"]["instances"][0]["failures"] == 2
    view.play_spark("simple-primary", "RUNNING", attempts=3)
    view.wait_conditions("JmsBridge", "simple", RUNNING)
    view.play_spark("simple-primary", "FAILED", "Job aborted: KafkaException: _MSG_TIMED_OUT", attempts=3)
    bridge = view.wait_conditions("JmsBridge", "simple", FAILED)
    assert "the same failure 3 times in a row" in view.message(bridge, "Stalled")
    view.wait(lambda: ("simple", "Warning", "ApplicationFailed") in view.events(), "a Warning Event")


def test_an_outage_the_job_reports_is_reconciling_until_it_is_back(view: View) -> None:
    """The job's own reporting code writes the health ConfigMap, as the running job's ingest would: a JMS
    broker lost, then Kafka lost (bridge_job/faults/outages.py)."""
    view.create(simple_bridge(), route("out"))
    view.wait(lambda: "simple-primary" in view.apps(), "the SparkApplication")
    view.play_spark("simple-primary", "RUNNING")
    view.wait_conditions("JmsBridge", "simple", RUNNING)

    report = HealthConfigMap(
        job_client(view.kube, NAMESPACE, "simple", operator=True), NAMESPACE, default_id("simple"), "primary"
    )
    health = ConnectionHealth(report, 300, "jms")
    try:
        health.back("JMS")
        connected = RUNNING | {"JmsConnected": ("True", "Connected")}

        def now(expected: dict[str, tuple[str, str]]) -> dict[str, Any] | None:
            bridge = view.bridge("simple")
            return bridge if view.conditions(bridge, every=True) == expected else None

        view.wait(lambda: now(connected), "JmsConnected")

        health.failing("JMS source in.orders", ConnectionError("tcp://amq:61616?jms.password=pw1 reset"))
        reconnecting = {
            "Ready": ("False", "JmsReconnecting"),
            "Reconciling": ("True", "JmsReconnecting"),
            "JmsConnected": ("False", "Reconnecting"),
        }
        bridge = view.wait(lambda: now(reconnecting), "JmsReconnecting")
        message = view.message(bridge)
        assert message.startswith("instance primary lost its JMS broker at ")
        assert "spec.outages.patienceSeconds=300" in message and "reset" in message and "pw1" not in message
        view.wait(lambda: ("simple", "Warning", "JmsReconnecting") in view.events(), "a Warning Event")

        health.back("JMS source in.orders")
        view.wait(lambda: now(connected), "Running again")

        kafka = ConnectionHealth(report, 300, "kafka")
        kafka.back("Kafka at kafka:9092 while starting")
        connected |= {"KafkaConnected": ("True", "Connected")}
        view.wait(lambda: now(connected), "KafkaConnected")
        kafka.failing("Kafka at kafka:9092 while journalling in.orders", "Local: Broker transport failure")
        kafka_lost = connected | {
            "Ready": ("False", "KafkaReconnecting"),
            "Reconciling": ("True", "KafkaReconnecting"),
            "KafkaConnected": ("False", "Reconnecting"),
        }
        bridge = view.wait(lambda: now(kafka_lost), "KafkaReconnecting")
        assert view.message(bridge).startswith("instance primary lost its Kafka cluster at ")
        kafka.back("Kafka at kafka:9092 while journalling in.orders")
        view.wait(lambda: now(connected), "Running again after Kafka")
    finally:
        report.stop()


def test_a_checkpoint_mismatch_the_job_reports_is_stalled_with_its_reason(view: View) -> None:
    """The job's own reporting code says why it stops, as `bridge_job/supervision/runner.py` does."""
    view.create(simple_bridge(), route("out"))
    view.wait(lambda: "simple-primary" in view.apps(), "the SparkApplication")
    view.play_spark("simple-primary", "RUNNING")
    view.wait_conditions("JmsBridge", "simple", RUNNING)

    line = (
        "bridge simple: checkpoint mismatch on topic simple.jms-bridge.journal: checkpoint /cp was taken ..."
    )
    report = HealthConfigMap(
        job_client(view.kube, NAMESPACE, "simple", operator=True), NAMESPACE, default_id("simple"), "primary"
    )
    try:
        report.report_stop("CheckpointMismatch", line)
    finally:
        report.stop()
    view.play_spark("simple-primary", "FAILING", "exit code 2", attempts=2)
    mismatch = {"Ready": ("False", "CheckpointMismatch"), "Stalled": ("True", "CheckpointMismatch")}
    bridge = view.wait_conditions("JmsBridge", "simple", mismatch)
    assert line in view.message(bridge, "Stalled")
    assert "jmsbridge.dev/reset-checkpoint=earliest|committed|latest" in view.message(bridge, "Stalled")

    # The user's way forward: an annotation that names no position is refused, saying which there are.
    annotate = {"metadata": {"annotations": {"jmsbridge.dev/reset-checkpoint": "start"}}}
    view.kube.patch(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE, annotate)
    invalid = {"Ready": ("False", "InvalidSpec"), "Stalled": ("True", "InvalidSpec")}
    bridge = view.wait_conditions("JmsBridge", "simple", invalid)
    assert "'start' is no position to reset the checkpoint to; use one of earliest, committed, latest" in (
        view.message(bridge)
    )
    # `latest`: the request reaches the job with its config, and the instance is restarted with it
    submitted = view.apps()["simple-primary"]["metadata"]["annotations"]["jmsbridge.dev/spec-hash"]
    annotate["metadata"]["annotations"]["jmsbridge.dev/reset-checkpoint"] = "latest"
    view.kube.patch(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE, annotate)
    config = view.wait(lambda: (c := view.job_config("simple")) and c.checkpoint_reset and c, "the request")
    request = config.checkpoint_reset
    assert request.to == "latest"
    taken = {"to": "latest", "id": request.id, "state": "Requested"}
    view.wait(
        lambda: (view.bridge("simple") or {}).get("status", {}).get("checkpointReset") == taken, "status"
    )
    view.wait(
        lambda: (
            view.apps()["simple-primary"]["metadata"]["annotations"]["jmsbridge.dev/spec-hash"] != submitted
        ),
        "the application replaced",
    )
    # the job resets its checkpoint once and says what it skipped (as bridge_job/supervision/checkpoints.py)
    view.play_spark("simple-primary", "RUNNING", attempts=3)
    report = HealthConfigMap(
        job_client(view.kube, NAMESPACE, "simple", operator=True), NAMESPACE, default_id("simple"), "primary"
    )
    try:
        summary = "topic simple.jms-bridge.journal partition 0: checkpoint at 24, ...: starts at 5 (skips 5)"
        report({"checkpointReset": {"id": request.id, "to": "latest", "summary": summary}})
        done = view.wait(
            lambda: (
                ((b := view.bridge("simple")) or {}).get("status", {}).get("checkpointReset", {}).get("state")
                == "Done"
                and b
            ),
            "the reset done",
        )
    finally:
        report.stop()
    assert done["status"]["checkpointReset"]["summary"] == summary
    assert "jmsbridge.dev/reset-checkpoint" not in (done["metadata"].get("annotations") or {})
    view.wait_conditions("JmsBridge", "simple", RUNNING)
    said = f"Checkpoint reset to latest by instance primary: {summary}"
    view.wait(lambda: said in view.event_messages("CheckpointReset"), "the CheckpointReset Event")
    assert view.job_config("simple").checkpoint_reset == request  # type: ignore[union-attr]  # kept: done once


def test_failover_to_the_standby(view: View) -> None:
    view.create(simple_bridge(standby=True))
    view.wait(lambda: len(view.apps()) == 2, "two SparkApplications")
    view.play_spark("simple-primary", "RUNNING")
    view.wait_conditions("JmsBridge", "simple", AWAITING_LEASE)  # it runs; no instance is active yet
    view.play_lease("simple", PRIMARY)
    view.wait_conditions("JmsBridge", "simple", STANDBY_STARTING)
    view.play_spark("simple-secondary", "RUNNING")
    bridge = view.wait_conditions("JmsBridge", "simple", RUNNING)
    assert [i["role"] for i in bridge["status"]["instances"]] == ["active", "standby"]

    view.play_spark("simple-primary", "FAILED", "node lost")
    view.play_lease("simple", SECONDARY, transitions=1)  # the standby took the Lease over
    bridge = view.wait_conditions("JmsBridge", "simple", {"Ready": ("True", "Degraded")})
    assert bridge["status"]["activeInstance"] == "simple-secondary"
    assert bridge["status"]["failovers"] == 1
    assert "SparkApplication simple-primary is FAILED: node lost" in view.message(bridge)
    view.wait(lambda: ("simple", "Warning", "Failover") in view.events(), "a Failover Event")


@pytest.mark.slow
def test_invalid_spec_and_bad_routes_are_stalled_with_a_message(view: View) -> None:
    broken = simple_bridge("broken")
    broken["spec"]["kafka"] = {"bootstrapServers": "kafka:9092", "securityProtocol": "SASL_SSL"}
    with without_validation_rules(view.kube):  # what the CRD's CEL rule refuses, where it is not run
        view.create(broken)
    invalid = {"Ready": ("False", "InvalidSpec"), "Stalled": ("True", "InvalidSpec")}
    bridge = view.wait_conditions("JmsBridge", "broken", invalid)
    assert "spec.kafka: securityProtocol SASL_SSL needs `sasl`" in view.message(bridge)
    assert view.apps() == {} and view.config_map("broken") is None

    view.create(
        simple_bridge(),
        route("first", order=10),
        route("ghost-route", "ghost"),
        route("invalid-match", order=30, match={"address": "nowhere.*"}),
    )
    view.wait(lambda: view.routes_in_config("simple") == ["first"], "the first route in the config")
    view.create(route("second", order=10, topic="other"))  # newer: the order is taken
    view.wait_conditions("JmsBridgeRoute", "ghost-route", rejected("BridgeNotFound"))
    route_obj = view.wait_conditions("JmsBridgeRoute", "second", rejected("DuplicateOrder"))
    assert "order 10 is already taken by route first" in view.message(route_obj, "Accepted")
    route_obj = view.wait_conditions("JmsBridgeRoute", "invalid-match", rejected("InvalidMatch"))
    assert "matches none of the bridge's sources" in view.message(route_obj, "Accepted")
    view.wait(
        lambda: (view.bridge("simple") or {})["status"].get("rejectedRoutes") == ["invalid-match", "second"],
        "rejected routes on the bridge",
    )
    assert view.routes_in_config("simple") == ["first"]

    # Fixing things makes them go through.
    view.kube.patch(GROUP_VERSION, "JmsBridgeRoute", "second", NAMESPACE, {"spec": {"order": 20}})
    view.wait(lambda: view.routes_in_config("simple") == ["first", "second"], "the fixed route in the config")
    view.kube.patch(
        GROUP_VERSION, "JmsBridge", "broken", NAMESPACE, {"spec": {"kafka": {"securityProtocol": None}}}
    )
    view.wait_conditions("JmsBridge", "broken", STARTING)
    view.wait(lambda: "broken-primary" in view.apps(), "the fixed bridge's application")
    view.create(simple_bridge("ghost"))
    view.wait_conditions(
        "JmsBridgeRoute", "ghost-route", {"Accepted": ("True", "Accepted"), "Ready": ("True", "InEffect")}
    )


def test_a_changed_bridge_id_that_reached_the_operator_is_refused(view: View) -> None:
    """Stored without the CRDs' CEL rules, as on a cluster whose CRDs predate the transition rules: the
    operator refuses the change itself, and the application keeps running as the bridge id it started
    with."""
    view.create(simple_bridge(), route("out"))
    view.wait(lambda: "simple-primary" in view.apps(), "the application")
    view.play_spark("simple-primary", "RUNNING")
    view.wait_conditions("JmsBridge", "simple", RUNNING)
    app = view.apps()["simple-primary"]

    with without_validation_rules(view.kube):
        view.kube.patch(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE, {"spec": {"bridgeId": "other"}})
    invalid = {"Ready": ("False", "InvalidSpec"), "Stalled": ("True", "InvalidSpec")}
    bridge = view.wait_conditions("JmsBridge", "simple", invalid)
    assert "spec.bridgeId: the bridge ran as 'apps-simple'" in view.message(bridge)
    assert bridge["status"]["bridgeId"] == "apps-simple"
    assert view.apps()["simple-primary"]["metadata"]["resourceVersion"] == app["metadata"]["resourceVersion"]

    with without_validation_rules(view.kube):
        view.kube.patch(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE, {"spec": {"bridgeId": None}})
    view.wait_conditions("JmsBridge", "simple", RUNNING)


def test_route_edit_changes_the_config_not_the_application(view: View) -> None:
    view.create(simple_bridge(), route("out", topic="orders"), route("extra", order=20, topic="extra"))
    view.wait(lambda: view.routes_in_config("simple") == ["out", "extra"], "both routes in the config")
    view.play_spark("simple-primary", "RUNNING")
    view.wait_conditions("JmsBridge", "simple", RUNNING)
    app = view.apps()["simple-primary"]
    version, generation = app["metadata"]["resourceVersion"], app["metadata"]["generation"]

    view.kube.patch(GROUP_VERSION, "JmsBridgeRoute", "out", NAMESPACE, {"spec": {"kafkaTopic": "orders-v2"}})
    view.wait(
        lambda: (c := view.job_config("simple")) and c.routes[0].spec.kafka_topic == "orders-v2", "new topic"
    )
    view.kube.delete(GROUP_VERSION, "JmsBridgeRoute", "extra", NAMESPACE)
    view.wait(lambda: view.routes_in_config("simple") == ["out"], "the deleted route gone from the config")
    view.wait(lambda: (view.bridge("simple") or {})["status"].get("routeCount") == 1, "routeCount 1")
    app = view.apps()["simple-primary"]
    assert (app["metadata"]["resourceVersion"], app["metadata"]["generation"]) == (version, generation)
    assert view.conditions(view.bridge("simple")) == RUNNING

    # A change of the bridge itself does reach the application (and the spark-operator restarts it).
    view.kube.patch(
        GROUP_VERSION, "JmsBridge", "simple", NAMESPACE, {"spec": {"spark": {"executor": {"instances": 3}}}}
    )
    view.wait(lambda: view.apps()["simple-primary"]["metadata"]["generation"] > generation, "spec replaced")
    app = view.apps()["simple-primary"]
    assert app["spec"]["executor"]["instances"] == 3


def test_suspend_stops_and_resume_restarts(view: View) -> None:
    view.create(simple_bridge(standby=True), route("out"))
    view.wait(lambda: len(view.apps()) == 2, "two SparkApplications")
    view.kube.patch(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE, {"spec": {"suspend": True}})
    view.wait(lambda: view.apps() == {}, "the applications deleted")
    bridge = view.wait_conditions("JmsBridge", "simple", {"Ready": ("False", "Suspended")})
    assert bridge["status"]["instances"] == [] and view.config_map("simple") is not None

    view.kube.patch(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE, {"spec": {"suspend": False}})
    view.wait(lambda: sorted(view.apps()) == ["simple-primary", "simple-secondary"], "the applications back")
    view.wait_conditions("JmsBridge", "simple", STARTING)


def test_a_bridge_deleted_while_a_reconciliation_runs_goes_when_it_ends(
    view: View, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kopf keeps the finalizer until the bridge's daemons have exited. Its rechecks daemon finishes a
    reconciliation under way first (in a thread), and kopf then looks again only after the daemon's
    cancellation polling: kopf's default, 60 s, left the deleted bridge there for a minute."""
    in_flight, deleted = threading.Event(), threading.Event()
    reconcile_if_due, bridge_deleted = Reconciler.reconcile_if_due, Reconciler.bridge_deleted

    def slow_once(self: Reconciler, namespace: str, name: str, routes: Any) -> None:
        if not in_flight.is_set():
            in_flight.set()
            assert deleted.wait(30), "kopf never handled the deletion"
        reconcile_if_due(self, namespace, name, routes)

    def noted(self: Reconciler, body: Any, routes: Any) -> None:
        bridge_deleted(self, body, routes)
        deleted.set()

    monkeypatch.setattr(Reconciler, "reconcile_if_due", slow_once)
    monkeypatch.setattr(Reconciler, "bridge_deleted", noted)
    view.create(simple_bridge())  # due once its gather time is over (`reconcile_soon`)
    view.wait(in_flight.is_set, "the due reconciliation under way")
    view.kube.delete(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE)
    view.kube.wait_for(lambda: view.bridge("simple") is None, timeout=15, what="the bridge gone")


def test_deleting_a_bridge_removes_everything_it_created(view: View) -> None:
    view.create(simple_bridge(standby=True), route("out"))
    view.wait(lambda: len(view.apps()) == 2, "two SparkApplications")
    view.wait_conditions(
        "JmsBridgeRoute", "out", {"Accepted": ("True", "Accepted"), "Ready": ("True", "InEffect")}
    )
    view.kube.delete(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE)
    view.wait(lambda: view.bridge("simple") is None, "the bridge gone (finalizer released)")
    assert view.apps() == {} and view.config_map("simple") is None
    assert view.ready_gauge("simple") is None  # no series left for a bridge that is gone
    view.wait_conditions("JmsBridgeRoute", "out", rejected("BridgeNotFound"))
    # Nothing comes back when the deleted applications' events arrive.
    view.create(simple_bridge("other"))
    view.wait(lambda: "other-primary" in view.apps(), "another bridge reconciled after the deletion")
    assert sorted(view.apps()) == ["other-primary"]


def test_operator_restart_creates_nothing_twice_and_restarts_nothing(
    cluster: KubeApi, no_kafka_checks: None
) -> None:
    view = View(cluster)
    bridge = simple_bridge(standby=True)
    bridge["spec"]["jms"]["credentialsSecretRef"] = {"name": "amq-credentials"}  # read again: the same
    with chart_operator(cluster):
        view.create(AMQ_SECRET, bridge, route("out"), route("extra", order=20))
        view.wait(
            lambda: len(view.apps()) == 2 and view.routes_in_config("simple") == ["out", "extra"],
            "reconciled",
        )
        view.play_spark("simple-primary", "RUNNING")
        view.play_spark("simple-secondary", "SUBMITTED")
        view.play_lease("simple", PRIMARY)
        view.wait_conditions(
            "JmsBridge", "simple", {"Ready": ("True", "Running"), "Reconciling": ("True", "StandbyStarting")}
        )
        view.wait_conditions(
            "JmsBridgeRoute", "extra", {"Accepted": ("True", "Accepted"), "Ready": ("True", "InEffect")}
        )

    # While the operator is down, the standby comes up.
    view.play_spark("simple-secondary", "RUNNING")
    versions = {name: app["metadata"]["resourceVersion"] for name, app in view.apps().items()}
    config_version = (view.config_map("simple") or {})["metadata"]["resourceVersion"]
    route_versions = {n: (view.route(n) or {})["metadata"]["resourceVersion"] for n in ("out", "extra")}

    with chart_operator(cluster):
        # The resumed bridge looks again and sees the standby running: that is how we know it resumed.
        view.wait_conditions("JmsBridge", "simple", RUNNING)
        assert {name: app["metadata"]["resourceVersion"] for name, app in view.apps().items()} == versions
        assert (view.config_map("simple") or {})["metadata"]["resourceVersion"] == config_version
        assert {
            n: (view.route(n) or {})["metadata"]["resourceVersion"] for n in ("out", "extra")
        } == route_versions
        history = cluster.history(SPARK_VERSION, "SparkApplication", "simple-primary", NAMESPACE)
        # Created by us (its spec noted as stored: the server stored it as sent, no second write), then
        # RUNNING by the "spark-operator".
        assert len(history) == 2
        assert [v["metadata"]["generation"] for v in history if v is not None] == [1, 1]


def test_an_operator_upgrade_moves_bridges_to_its_job_image_standby_first(
    cluster: KubeApi, no_kafka_checks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job image of a bridge that names none is the operator's, applied when it renders: the stored
    bridge holds no image, so a new operator's image reaches it through a rollout. One that names its
    image keeps it."""
    old, new = "registry.example.com/bridge-job:1.0.0", "registry.example.com/bridge-job:1.1.0"
    view = View(cluster)
    pinned = simple_bridge("pinned")
    pinned["spec"]["spark"] = {"image": "registry.example.com/own-job:7"}
    monkeypatch.setenv(ENV_JOB_IMAGE, old)
    with chart_operator(cluster):
        view.create(simple_bridge(standby=True), pinned, route("out"))
        view.wait(lambda: len(view.apps()) == 3, "three SparkApplications")
        assert {name: app["spec"]["image"] for name, app in view.apps().items()} == {
            "simple-primary": old,
            "simple-secondary": old,
            "pinned-primary": "registry.example.com/own-job:7",
        }
        assert "image" not in (view.bridge("simple") or {})["spec"]["spark"]  # no default stamped
        view.play_spark("simple-primary", "RUNNING", attempts=1)
        view.play_lease("simple", PRIMARY)
        view.wait_conditions("JmsBridge", "simple", STANDBY_STARTING)
        view.play_spark("simple-secondary", "RUNNING", attempts=1)
        view.play_spark("pinned-primary", "RUNNING", attempts=1)
        view.wait_conditions("JmsBridge", "simple", RUNNING)
        view.wait_conditions("JmsBridge", "pinned", RUNNING)
    pinned_version = view.apps()["pinned-primary"]["metadata"]["resourceVersion"]

    monkeypatch.setenv(ENV_JOB_IMAGE, new)  # the upgrade
    with chart_operator(cluster):
        view.wait(lambda: view.apps()["simple-secondary"]["spec"]["image"] == new, "the standby first")
        view.wait(
            lambda: (
                (b := view.bridge("simple"))
                and view.conditions(b) == ROLLING_OUT
                and view.message(b, "Reconciling") == WAITING_FOR_THE_STANDBY
            ),
            "the rollout waiting for the standby",
        )
        assert view.apps()["simple-primary"]["spec"]["image"] == old  # the active one keeps moving data
        view.play_spark("simple-secondary", "SUBMITTED", attempts=2)
        view.play_spark("simple-secondary", "RUNNING", attempts=2)
        view.wait(lambda: view.apps()["simple-primary"]["spec"]["image"] == new, "then the active")
        view.play_spark("simple-primary", "PENDING_RERUN", attempts=1)
        view.play_lease("simple", SECONDARY, transitions=1)
        view.play_spark("simple-primary", "RUNNING", attempts=2)
        view.wait_conditions("JmsBridge", "simple", RUNNING)
        assert view.apps()["pinned-primary"]["metadata"]["resourceVersion"] == pinned_version


def test_secret_values_never_leave_their_secrets(view: View, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secrets = [example("secrets.yaml", "Secret", name) for name in ("amq-credentials", "bridge-kafka-user")]
    values = ["Zq7-jms-user-x1", "Zq7-jms-password-x2", "Zq7-kafka-user-x3", "Zq7-kafka-password-x4"]
    secrets[0]["stringData"] = {"username": values[0], "password": values[1]}
    secrets[1]["stringData"] = {"username": values[2], "password": values[3]}
    view.create(*secrets, example("bridge.yaml", "JmsBridge"), *load_yaml(EXAMPLES / "routes.yaml"))
    view.wait(lambda: len(view.apps()) == 2, "two SparkApplications")
    view.play_spark("orders-primary", "FAILED", "auth failed")
    bridge = view.wait_conditions("JmsBridge", "orders", RESTARTING)
    assert "auth failed" in view.message(bridge)

    needles = values + [base64.b64encode(v.encode()).decode() for v in values]
    written = json.dumps(everything_but_secrets(view.kube))
    assert "JMSBRIDGE_KAFKA_PASSWORD" in written  # the reference is there...
    assert [n for n in needles if n in written] == []  # ...the value is not
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert [n for n in needles if n in logged] == []


def test_allowed_inline_credentials_are_a_warning_event(view: View) -> None:
    inline = simple_bridge("inline")
    inline["spec"]["jms"]["connectionFactory"]["properties"]["trustStorePassword"] = "Zq7-inline-x5"
    inline["spec"]["security"] = {"allowInlineCredentials": True}
    view.create(inline, route("inline-out", "inline"))
    view.wait(lambda: ("inline", "Warning", "CredentialsInSpec") in view.events(), "the Warning")
    assert view.config_map("inline") is not None  # taken, as the switch allows
    assert view.conditions(view.bridge("inline")).get("Stalled") is None


def test_credentials_in_the_connection_factory_are_refused_by_the_operator(view: View) -> None:
    """The API server refuses them (a CEL rule, tests/operator/test_admission.py); where it did not (no
    CEL: before Kubernetes 1.25, or a CRD older than the rule), the operator refuses them, naming each
    field, never the value."""
    inline = simple_bridge("inline")
    inline["spec"]["jms"]["connectionFactory"]["properties"] |= {
        "brokerURL": "tcp://bridge:Zq7-inline-x6@amq:61616",
        "password": "Zq7-inline-x7",
    }
    with pytest.raises(KubeApiError, match=r"a credential in spec\.jms\.connectionFactory\.properties"):
        view.kube.create(inline)
    with without_validation_rules(view.kube):
        view.create(inline, route("inline-out", "inline"))
    invalid = {"Ready": ("False", "InvalidSpec"), "Stalled": ("True", "InvalidSpec")}
    bridge = view.wait_conditions("JmsBridge", "inline", invalid)
    message = view.message(bridge)
    for field in ("brokerURL", "password"):
        assert f"spec.jms.connectionFactory.properties.{field}: " in message
    assert "Zq7-inline" not in json.dumps(bridge["status"])
    assert view.config_map("inline") is None and view.apps() == {}


def everything_but_secrets(kube: KubeApi) -> list[dict[str, Any]]:
    """Every object of every listable kind the API server serves, except Secrets themselves."""
    objects: list[dict[str, Any]] = []
    api_versions = ["v1"] + [
        version["groupVersion"]
        for group in kube.request("GET", "/apis")["groups"]
        for version in group["versions"]
    ]
    for api_version in api_versions:
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        for resource in kube.request("GET", prefix)["resources"]:
            if (
                "/" in resource["name"]
                or "list" not in resource.get("verbs", ["list"])
                or resource["kind"] == "Secret"
            ):
                continue
            objects += kube.request("GET", f"{prefix}/{resource['name']}")["items"]
    assert any(o.get("kind", "") == "SparkApplication" or "sparkConf" in json.dumps(o) for o in objects)
    return objects


def test_no_short_timers_only_quiet_loops() -> None:
    """kopf logs every timer run at INFO: a timer every 2 s per bridge floods the log. What must happen
    at a time (a Lease running out) is a daemon's job (`handlers/rechecks.py`)."""
    from kopf._core.intents.handlers import TimerHandler

    from tests.apiserver.operator_runner import registry_of

    registry = registry_of(OPERATOR_MODULE)
    timers = [h for h in registry._spawning.get_all_handlers() if isinstance(h, TimerHandler)]
    assert "bridge_resync" in [t.id for t in timers]  # timers are found...
    assert [t.id for t in timers if (t.interval or 0) < 60] == []  # ...and none runs every few seconds


def test_kopf_run_starts_the_operator(cluster: KubeApi, tmp_path: Any) -> None:
    """`kopf run -m jmsbridge_operator.main` (what the Helm chart's `jmsbridge operator` also does) works."""
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "PYTHONPATH": f"{REPO}:{REPO / 'operator'}"}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    env[KAFKA_CHECKS_ENV] = "false"  # `kafka:9092` does not exist here
    command = [
        sys.executable,
        "-m",
        "kopf",
        "run",
        "-m",
        "jmsbridge_operator.main",
        "--all-namespaces",
        "--standalone",
    ]
    with (tmp_path / "operator.log").open("wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            view = View(cluster)
            view.create(simple_bridge(), route("out"))
            view.wait(
                lambda: "simple-primary" in view.apps() or process.poll() is not None, "the application"
            )
            assert process.poll() is None, (tmp_path / "operator.log").read_text()
            view.wait_conditions("JmsBridge", "simple", STARTING)
        finally:
            process.terminate()
            process.wait(timeout=60)


# ---------------------------------------------------------------------------------------------------
# Drift repair and safe rollouts (the resync timer is 300 s here: what happens within a test's seconds
# happens because the operator watches the objects it owns)


def test_a_hand_edited_application_is_put_back(view: View) -> None:
    view.create(simple_bridge(), route("out"))
    view.wait(lambda: "simple-primary" in view.apps(), "the application")
    view.play_spark("simple-primary", "RUNNING", attempts=1)
    view.wait_conditions("JmsBridge", "simple", RUNNING)
    rendered = view.apps()["simple-primary"]["spec"]

    view.kube.patch(
        SPARK_VERSION,
        "SparkApplication",
        "simple-primary",
        NAMESPACE,
        {"spec": {"image": "evil/image:1", "executor": {"instances": 7}}},
    )
    view.wait(lambda: view.apps()["simple-primary"]["spec"] == rendered, "the spec put back")
    event = view.wait(
        lambda: next(
            (e for e in view.kube.list("v1", "Event", NAMESPACE) if e["reason"] == "DriftRepaired"), None
        ),
        "a DriftRepaired Event",
    )
    assert event["type"] == "Warning"  # someone edits what the operator owns: worth a look
    assert event["message"] == (
        "Restored SparkApplication simple-primary: spec.image, spec.executor.instances changed by hand "
        "(the spark-operator restarts it)"
    )

    # A field we do not render, added by hand, goes as well: the whole spec is the operator's.
    view.kube.patch(
        SPARK_VERSION, "SparkApplication", "simple-primary", NAMESPACE, {"spec": {"proxyUser": "root"}}
    )
    view.wait(lambda: "proxyUser" not in view.apps()["simple-primary"]["spec"], "the added field removed")
    assert view.apps()["simple-primary"]["spec"] == rendered


def test_a_deleted_or_edited_config_map_comes_back_within_seconds(view: View) -> None:
    view.create(simple_bridge(), route("out"))
    view.wait(lambda: view.routes_in_config("simple") == ["out"], "the config")
    data = (view.config_map("simple") or {})["data"]

    view.kube.delete("v1", "ConfigMap", "simple-config", NAMESPACE)
    view.wait(
        lambda: (view.config_map("simple") or {}).get("data") == data, "the ConfigMap recreated", timeout=15
    )

    view.kube.patch("v1", "ConfigMap", "simple-config", NAMESPACE, {"data": {"job.yaml": "bridgeId: evil\n"}})
    view.wait(
        lambda: (view.config_map("simple") or {}).get("data") == data, "the ConfigMap repaired", timeout=15
    )
    view.wait(lambda: ("simple", "Warning", "DriftRepaired") in view.events(), "a DriftRepaired Warning")


ROLLING_OUT = {"Ready": ("True", "Running"), "Reconciling": ("True", "RollingOut")}
WAITING_FOR_THE_STANDBY = (
    "Rolling out the new spec: waiting for simple-secondary to run it before simple-primary (active)."
)


def _spec_hash(app: dict[str, Any]) -> str:
    return str(app["metadata"]["annotations"]["jmsbridge.dev/spec-hash"])


# A change of the spec, a restart asked for (`spec.restartNonce`) and a Secret the pods read rotated: all
# roll out the same way.
CHANGES = {
    "executor-instances": {"spark": {"executor": {"instances": 3}}},
    "restart-nonce": {"restartNonce": "2026-11-25T01:00:00Z"},
    "secret-rotated": None,
}
AMQ_SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    # marked for every bridge of the namespace (secret_marks.py)
    "metadata": {
        "name": "amq-credentials",
        "namespace": NAMESPACE,
        "annotations": {"jmsbridge.dev/bridges": "*"},
    },
    "stringData": {"username": "bridge", "password": "first"},
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_spec_change_reaches_the_standby_first_then_the_active(
    view: View, change: str, tmp_path: Path
) -> None:
    bridge = simple_bridge(standby=True)
    bridge["spec"]["jms"]["credentialsSecretRef"] = {"name": "amq-credentials"}
    view.create(AMQ_SECRET, bridge, route("out"))
    view.wait(lambda: len(view.apps()) == 2, "two SparkApplications")
    view.play_spark("simple-primary", "RUNNING", attempts=1)
    view.play_lease("simple", PRIMARY)
    view.wait_conditions("JmsBridge", "simple", STANDBY_STARTING)  # the primary is active from here on
    view.play_spark("simple-secondary", "RUNNING", attempts=1)
    view.wait_conditions("JmsBridge", "simple", RUNNING)
    before = {name: _spec_hash(app) for name, app in view.apps().items()}
    # The active's job follows its config file as the job does (`WatchedConfig`, asked every batch).
    active_job = WatchedConfig(view.mount("simple", tmp_path / "primary"))
    assert active_job.current().bridge.spark.executor.instances == 1

    if (patch := CHANGES[change]) is not None:
        view.kube.patch(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE, {"spec": patch})
    else:  # read again within JMSBRIDGE_SECRET_CHECK_INTERVAL (conftest.py)
        view.kube.patch("v1", "Secret", "amq-credentials", NAMESPACE, {"stringData": {"password": "second"}})
    # The standby gets the new spec; as it still reports its old submission's RUNNING, which is not
    # running the new spec, the rollout waits for it.
    view.wait(
        lambda: _spec_hash(view.apps()["simple-secondary"]) != before["simple-secondary"], "standby updated"
    )
    bridge = view.wait(
        lambda: (
            (b := view.bridge("simple"))
            and view.conditions(b) == ROLLING_OUT
            and view.message(b, "Reconciling") == WAITING_FOR_THE_STANDBY
            and b
        ),
        "the rollout waiting for the standby",
    )
    apps = view.apps()
    assert _spec_hash(apps["simple-primary"]) == before["simple-primary"]  # the active one keeps running
    assert apps["simple-primary"]["metadata"]["generation"] == 1
    assert bridge["status"]["activeInstance"] == "simple-primary"
    # ... and so does its job: its file in the rewritten ConfigMap holds the previous spec; a route
    # change meanwhile reaches it all the same. (A rotated Secret changes no file: the same spec.)
    assert (("simple", "Normal", "ConfigUpdated") in view.events()) == (change != "secret-rotated")
    assert view.mount("simple", tmp_path / "primary") == active_job.paths[0]
    assert active_job.changed() is None
    view.kube.patch(GROUP_VERSION, "JmsBridgeRoute", "out", NAMESPACE, {"spec": {"kafkaTopic": "out-v2"}})
    view.wait(
        lambda: (c := view.job_config("simple", "secondary")) and c.routes[0].spec.kafka_topic == "out-v2",
        "the route in the standby's file",
    )
    view.mount("simple", tmp_path / "primary")
    changed = active_job.changed()
    assert changed is not None and changed.routes[0].spec.kafka_topic == "out-v2"
    assert changed.bridge.spark.executor.instances == 1

    view.play_spark("simple-secondary", "SUBMITTED", attempts=2)  # resubmitted with the new spec...
    view.play_spark("simple-secondary", "RUNNING", attempts=2)  # ...and running it: now the active's turn
    view.wait(
        lambda: _spec_hash(view.apps()["simple-primary"]) != before["simple-primary"], "the active updated"
    )
    view.play_spark("simple-primary", "PENDING_RERUN", attempts=1)  # the spark-operator restarts it
    view.play_lease("simple", SECONDARY, transitions=1)
    view.wait(  # the updated standby took over
        lambda: (view.bridge("simple") or {})["status"].get("activeInstance") == "simple-secondary",
        "failover",
    )
    bridge = view.wait_conditions("JmsBridge", "simple", ROLLING_OUT)
    assert (
        view.message(bridge, "Reconciling")
        == "Rolling out the new spec: waiting for simple-primary to run it."
    )

    view.play_spark("simple-primary", "RUNNING", attempts=2)
    bridge = view.wait_conditions("JmsBridge", "simple", RUNNING)
    assert bridge["status"]["failovers"] == 1
    # Its turn came: the new spec in its new file; the previous file goes once nobody reads it.
    view.wait(lambda: len((view.config_map("simple") or {})["data"]) == 1, "the previous file gone")
    restarted = WatchedConfig(view.mount("simple", tmp_path / "primary")).current()
    assert restarted.bridge.spark.executor.instances == (3 if change == "executor-instances" else 1)
    updates = view.wait(
        lambda: len(u := view.event_messages("ApplicationUpdated")) >= 2 and u,
        "both ApplicationUpdated Events",
    )
    assert sorted(u.split()[2] for u in updates) == ["simple-primary", "simple-secondary"]  # once each
    secret_said = ["a Secret it reads changed" in u for u in updates]
    assert secret_said == [change == "secret-rotated"] * 2, updates


def test_a_spec_change_without_standby_says_it_causes_a_gap(view: View) -> None:
    view.create(simple_bridge(), route("out"))
    view.wait(lambda: "simple-primary" in view.apps(), "the application")
    view.play_spark("simple-primary", "RUNNING", attempts=1)
    view.wait_conditions("JmsBridge", "simple", RUNNING)

    view.kube.patch(
        GROUP_VERSION, "JmsBridge", "simple", NAMESPACE, {"spec": {"spark": {"image": "bridge:2"}}}
    )
    gap = "Restarting simple-primary with the new spec: without a standby (spec.failover.standby) the bridge "
    bridge = view.wait_conditions(
        "JmsBridge", "simple", {"Ready": ("True", "Running"), "Reconciling": ("True", "RollingOutWithGap")}
    )
    assert view.message(bridge, "Reconciling").startswith(gap)
    assert view.apps()["simple-primary"]["spec"]["image"] == "bridge:2"
    view.play_spark("simple-primary", "PENDING_RERUN", attempts=1)
    view.wait_conditions(
        "JmsBridge", "simple", {"Ready": ("False", "Starting"), "Reconciling": ("True", "RollingOutWithGap")}
    )
    view.play_spark("simple-primary", "RUNNING", attempts=2)
    view.wait_conditions("JmsBridge", "simple", RUNNING)
