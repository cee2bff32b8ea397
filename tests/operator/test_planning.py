"""Planning one reconciliation: which writes, which statuses (pure)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from jmsbridge_operator import naming
from jmsbridge_operator.kafka_checks.gate import GateVerdict, open_gate
from jmsbridge_operator.planning import Observed, Plan, plan
from jmsbridge_operator.status import find_condition

from bridge_job.config import JmsBridge, JobConfig
from testbed.resources import STANDBY, simple_bridge
from tests.operator.helpers import route

NOW = "2026-01-01T00:00:00Z"


def cluster_bridge(**spec: Any) -> dict[str, Any]:
    body = simple_bridge()
    body["metadata"].update(uid="uid-1", generation=2)
    body["spec"].update(spec)
    return body


def as_stored(body: dict[str, Any], state: str | None = None) -> dict[str, Any]:
    """An object as the API server would return it after our create (plus a status, for applications)."""
    stored = copy.deepcopy(body)
    stored["metadata"].update(uid="child", resourceVersion="7", generation=1)
    if state:
        stored["status"] = {"applicationState": {"state": state}}
    return stored


def steady(bridge: dict[str, Any], routes: list[dict[str, Any]], state: str = "RUNNING") -> Observed:
    """The cluster after a first reconciliation went through."""
    first = plan(Observed(bridge, routes), open_gate, NOW)
    config_map = next(as_stored(w.body) for w in first.writes if w.kind == "ConfigMap")
    apps = [as_stored(w.body, state) for w in first.writes if w.kind == naming.SPARK_KIND]
    return Observed({**bridge, "status": first.status}, routes, config_map, apps)


def verbs(decided: Plan) -> list[tuple[str, str, str]]:
    return [(w.verb, w.kind, w.name) for w in decided.writes]


def test_first_reconciliation_creates_config_then_applications() -> None:
    decided = plan(Observed(cluster_bridge(), [route("r1")]), open_gate, NOW)
    assert verbs(decided) == [
        ("create", "ConfigMap", "simple-config"),
        ("create", "SparkApplication", "simple-primary"),
    ]
    assert decided.status["routes"] == ["r1"]
    assert [u.status["conditions"][0]["reason"] for u in decided.routes] == ["Accepted"]


def test_nothing_changed_nothing_written() -> None:
    observed = steady(cluster_bridge(), [route("r1")])
    decided = plan(observed, open_gate, "2026-02-02T00:00:00Z")
    assert decided.writes == []
    assert decided.status["activeInstance"] == "simple-primary"
    again = dataclasses.replace(observed, bridge={**observed.bridge, "status": decided.status})
    second = plan(again, open_gate, "2026-03-03T00:00:00Z")
    assert second.status == decided.status and second.transition is None


def test_route_change_replaces_only_the_config_map() -> None:
    observed = steady(cluster_bridge(), [route("r1")])
    edited = route("r1", topic="elsewhere")
    decided = plan(dataclasses.replace(observed, routes=[edited, route("r2", order=20)]), open_gate, NOW)
    assert verbs(decided) == [("replace", "ConfigMap", "simple-config")]
    replaced = decided.writes[0].body
    assert replaced["metadata"]["resourceVersion"] == "7"  # optimistic concurrency
    ((_, text),) = replaced["data"].items()
    assert "elsewhere" in text


def test_bridge_change_replaces_applications_keeping_their_metadata() -> None:
    observed = steady(cluster_bridge(), [])
    observed.applications[0]["metadata"]["annotations"]["someone.else/note"] = "kept"
    changed = cluster_bridge(spark={"executor": {"instances": 3}})
    decided = plan(Observed(changed, [], observed.config_map, observed.applications), open_gate, NOW)
    assert verbs(decided) == [
        ("replace", "ConfigMap", "simple-config"),
        ("replace", "SparkApplication", "simple-primary"),
    ]
    app = decided.writes[1].body
    assert app["spec"]["executor"]["instances"] == 3
    assert app["metadata"]["annotations"]["someone.else/note"] == "kept"
    assert app["metadata"]["resourceVersion"] == "7" and "status" not in app


def test_standby_toggle_adds_and_removes_the_secondary() -> None:
    observed = steady(cluster_bridge(), [])
    with_standby = cluster_bridge(**STANDBY)
    decided = plan(Observed(with_standby, [], observed.config_map, observed.applications), open_gate, NOW)
    assert ("create", "SparkApplication", "simple-secondary") in verbs(decided)
    pair = steady(with_standby, [])
    decided = plan(Observed(cluster_bridge(), [], pair.config_map, pair.applications), open_gate, NOW)
    assert ("delete", "SparkApplication", "simple-secondary") in verbs(decided)


def test_suspend_deletes_applications_and_keeps_the_config() -> None:
    observed = steady(cluster_bridge(**STANDBY), [])
    suspended = cluster_bridge(**STANDBY, suspend=True)
    decided = plan(Observed(suspended, [], observed.config_map, observed.applications), open_gate, NOW)
    assert verbs(decided) == [
        ("replace", "ConfigMap", "simple-config"),  # it says `suspend: true` now
        ("delete", "SparkApplication", "simple-primary"),
        ("delete", "SparkApplication", "simple-secondary"),
    ]
    ready = find_condition(decided.status, "Ready")
    assert ready is not None and ready["reason"] == "Suspended" and decided.status["instances"] == []


def test_closed_gate_stops_the_applications() -> None:
    observed = steady(cluster_bridge(), [])
    seen: list[tuple[str, int]] = []

    def gate(bridge: JmsBridge, config: JobConfig) -> GateVerdict:
        seen.append((bridge.metadata.name, len(config.routes)))
        return GateVerdict(open=False, reason="TopicNotFound", message="topic out does not exist")

    decided = plan(Observed(observed.bridge, [], observed.config_map, observed.applications), gate, NOW)
    assert seen == [("simple", 0)]
    assert verbs(decided) == [("delete", "SparkApplication", "simple-primary")]
    stalled = find_condition(decided.status, "Stalled")
    assert stalled is not None and stalled["reason"] == "TopicNotFound"


def test_invalid_spec_touches_nothing_and_says_what_to_fix() -> None:
    observed = steady(cluster_bridge(), [route("r1")])
    broken = cluster_bridge(kafka={"bootstrapServers": "k:9092", "securityProtocol": "SASL_SSL"})
    decided = plan(
        Observed(broken, observed.routes, observed.config_map, observed.applications), open_gate, NOW
    )
    assert decided.writes == []
    ready = find_condition(decided.status, "Ready")
    assert ready is not None and ready["reason"] == "InvalidSpec"
    assert "spec.kafka: securityProtocol SASL_SSL needs `sasl`" in ready["message"]
    assert "keep running the last valid spec" in ready["message"]
    assert decided.routes[0].status["conditions"][0]["reason"] == "BridgeInvalid"


def test_objects_of_someone_else_are_not_taken_over() -> None:
    foreign = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "simple-config", "uid": "x"}}
    decided = plan(Observed(cluster_bridge(), [], foreign, []), open_gate, NOW)
    assert decided.writes == []
    stalled = find_condition(decided.status, "Stalled")
    assert stalled is not None and stalled["reason"] == "NameConflict"
    assert "ConfigMap simple-config already exists and is not owned by this bridge" in stalled["message"]


def test_dead_letter_policy_without_topic_is_an_invalid_bridge() -> None:
    decided = plan(Observed(cluster_bridge(routing={"onSoftFailure": "deadLetter"})), open_gate, NOW)
    ready = find_condition(decided.status, "Ready")
    assert ready is not None and "spec.routing.onSoftFailure" in ready["message"]


def test_transient_gate_changes_no_application() -> None:
    observed = steady(cluster_bridge(), [route("r1")])

    def unreachable(bridge: JmsBridge, config: JobConfig) -> GateVerdict:
        return GateVerdict(open=False, reason="KafkaUnreachable", message="retrying", transient=True)

    changed = cluster_bridge(spark={"executor": {"instances": 3}})
    decided = plan(dataclasses.replace(observed, bridge=changed), unreachable, NOW)
    assert [w.kind for w in decided.writes] == ["ConfigMap"]  # the config follows; applications wait
    reconciling = find_condition(decided.status, "Reconciling")
    assert reconciling is not None and reconciling["reason"] == "KafkaUnreachable"
    assert decided.status["instances"][0]["state"] == "RUNNING"
    missing = plan(Observed(cluster_bridge(), [route("r1")]), unreachable, NOW)
    assert [w.kind for w in missing.writes] == ["ConfigMap"]  # nothing started while it is unreachable


def test_a_changed_bridge_id_is_refused_and_changes_nothing_that_runs() -> None:
    """Where the API server did not refuse it (a CRD older than its transition rule)."""
    observed = steady(cluster_bridge(), [route("r1")])
    assert observed.bridge["status"]["bridgeId"] == "apps-simple"
    changed = copy.deepcopy(dict(observed.bridge))
    changed["spec"]["bridgeId"] = "other"
    decided = plan(dataclasses.replace(observed, bridge=changed), open_gate, NOW)
    assert decided.writes == []
    ready = find_condition(decided.status, "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
    assert "spec.bridgeId: the bridge ran as 'apps-simple'" in ready["message"]
    assert decided.status["bridgeId"] == "apps-simple"  # so the next reconciliation refuses it too

    del changed["spec"]["bridgeId"]  # set back: runs as before
    again = plan(dataclasses.replace(observed, bridge=changed), open_gate, NOW)
    assert again.writes == []
    assert (find_condition(again.status, "Ready") or {}).get("reason") == "Running"
