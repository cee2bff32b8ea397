"""SparkApplications through the spark-operator's own models (`kubeflow-spark-api`), pure."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from jmsbridge_operator import naming
from jmsbridge_operator.drift import application_drift
from jmsbridge_operator.kafka_checks.gate import open_gate
from jmsbridge_operator.planning import Observed, plan
from jmsbridge_operator.render import render
from jmsbridge_operator.spark_application import InvalidApplication, checked
from jmsbridge_operator.status import find_condition
from kubeflow_spark_api.models import SparkV1beta2SparkApplication

from bridge_job.config import JmsBridge, job_config
from testbed.resources import simple_bridge
from tests.operator.helpers import bridge

NOW = "2026-01-01T00:00:00Z"


def rendered_application() -> dict[str, Any]:
    model = JmsBridge.model_validate(bridge())
    return render(model, job_config(model, [])).applications["primary"]


def test_the_rendered_application_is_what_the_models_dump() -> None:
    app = rendered_application()
    assert SparkV1beta2SparkApplication.from_dict(app).to_dict() == app
    assert list(checked(app)["spec"])[:3] == ["type", "pythonVersion", "mode"]  # in our order, for readers


@pytest.mark.parametrize(
    ("where", "typo"),
    [
        (("spec",), "sparkConfs"),
        (("spec", "driver"), "serviceAcount"),
        (("spec", "executor"), "instance"),
        (("metadata",), "label"),
    ],
)
def test_a_misspelled_field_cannot_reach_the_api(where: tuple[str, ...], typo: str) -> None:
    app = rendered_application()
    parent = app
    for key in where:
        parent = parent[key]
    parent[typo] = "x"
    # The models alone drop it without a word (as the API server prunes it): the reason for the check.
    dumped = SparkV1beta2SparkApplication.from_dict(app).to_dict()
    dumped_parent = dumped
    for key in where:
        dumped_parent = dumped_parent[key]
    assert typo not in dumped_parent
    with pytest.raises(InvalidApplication, match=rf"does not know: {'.'.join(where)}\.{typo}$"):
        checked(app)


def test_a_misspelled_volume_source_stops_the_bridge_with_invalid_spec() -> None:
    """`spark.pod.volumes` reach the SparkApplication as written: the operator writes no application."""
    body = simple_bridge()
    body["metadata"].update(uid="uid-1", generation=2)
    body["spec"]["spark"] = {"pod": {"volumes": [{"name": "tls", "secrett": {"secretName": "ca"}}]}}
    decided = plan(Observed(body, []), open_gate, NOW)
    assert [w.kind for w in decided.writes if w.kind == naming.SPARK_KIND] == []
    ready = find_condition(decided.status, "Ready")
    assert ready is not None and ready["reason"] == "InvalidSpec"
    assert re.search(r"does not know: spec\.volumes\[\d\]\.secrett", ready["message"]), ready["message"]
    assert [p.subject for p in decided.validation.problems] == ["spec.spark"]  # `jmsbridge validate` says it


def test_kubernetes_quantities_in_the_bridges_volumes_are_taken() -> None:
    body = bridge()
    scratch = {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}
    body["spec"]["spark"]["pod"] = {"volumes": [scratch]}
    model = JmsBridge.model_validate(body)
    app = render(model, job_config(model, [])).applications["primary"]
    assert app["spec"]["volumes"][-1] == scratch


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("executor", "instances"), "2", "valid integer"),
        (("driver", "cores"), 1.5, "valid integer"),
        (("mode",), "clustre", "spec.mode: 'clustre' is not one of"),
        (("restartPolicy", "type"), "Sometimes", "spec.restartPolicy.type"),
    ],
)
def test_wrong_types_and_enum_values_are_refused(path: tuple[str, ...], value: Any, message: str) -> None:
    app = rendered_application()
    parent = app["spec"]
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    with pytest.raises(InvalidApplication, match=message):
        checked(app)


def test_drift_compares_the_fields_the_models_know() -> None:
    desired = rendered_application()
    live = copy.deepcopy(desired)
    live["metadata"]["annotations"][naming.ANNOTATION_STORED_SPEC_HASH] = "what we stored"
    live["spec"]["someFieldOfALaterRelease"] = "x"  # unknown to the models: the hash alone tells
    assert application_drift(live, desired) == ["spec"]
    live["spec"]["image"] = "evil/image:1"
    assert application_drift(live, desired) == ["spec.image"]
    live["spec"]["executor"]["instances"] = "7"  # refused by the models: compared as it is
    assert sorted(application_drift(live, desired)) == [
        "spec.executor.instances",
        "spec.image",
        "spec.someFieldOfALaterRelease",
    ]
