"""The job's config files during a rollout: the active instance reads its previous spec until its turn
(pure planning; `test_operator.py` has the same through the real kopf runtime)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import yaml
from jmsbridge_operator import naming
from jmsbridge_operator.config_files import file_of
from jmsbridge_operator.kafka_checks.gate import open_gate
from jmsbridge_operator.planning import Observed, Plan, plan

from bridge_job.config import JobConfig
from testbed.resources import STANDBY
from tests.operator.helpers import route
from tests.operator.test_planning import NOW, as_stored, cluster_bridge, steady

P, S = "simple-primary", "simple-secondary"


def standby_bridge(instances: int = 1) -> dict[str, Any]:
    spark = {**copy.deepcopy(STANDBY["spark"]), "executor": {"instances": instances}}
    return cluster_bridge(failover={"standby": True}, spark=spark)


def files(observed: Observed) -> dict[str, str]:
    return dict((observed.config_map or {}).get("data") or {})


def read_by(observed: Observed, app_name: str) -> JobConfig:
    """What an instance's job reads: its file in the ConfigMap."""
    app = next(a for a in observed.applications if a["metadata"]["name"] == app_name)
    key = file_of(app)
    assert key is not None and observed.config_map is not None
    return JobConfig.model_validate(yaml.safe_load(observed.config_map["data"][key]))


def applied(observed: Observed, decided: Plan, submissions: dict[str, str] | None = None) -> Observed:
    """The cluster after the plan's writes; `submissions` play the spark-operator resubmitting."""
    config_map, apps = observed.config_map, {a["metadata"]["name"]: dict(a) for a in observed.applications}
    for write in decided.writes:
        if write.kind == "ConfigMap":
            config_map = as_stored(write.body)
        else:
            apps[write.name] = {**as_stored(write.body), "status": apps[write.name].get("status")}
    for name, submission in (submissions or {}).items():
        apps[name]["status"] = {"applicationState": {"state": "RUNNING"}, "submissionID": submission}
    bridge = {**observed.bridge, "status": decided.status}
    return dataclasses.replace(
        observed, bridge=bridge, config_map=config_map, applications=list(apps.values())
    )


def test_the_active_reads_the_previous_spec_until_its_turn() -> None:
    observed = steady(standby_bridge(), [route("r1")])
    for app in observed.applications:
        app["status"]["submissionID"] = "first"
    assert read_by(observed, P).bridge.spark.executor.instances == 1

    # A bridge change: the standby's turn. Its file is new; the active's is the same.
    observed = dataclasses.replace(
        observed, bridge={**standby_bridge(3), "status": observed.bridge["status"]}
    )
    decided = plan(observed, open_gate, NOW)
    assert [(w.verb, w.name) for w in decided.writes] == [("replace", "simple-config"), ("replace", S)]
    observed = applied(observed, decided)
    assert read_by(observed, S).bridge.spark.executor.instances == 3
    assert read_by(observed, P).bridge.spark.executor.instances == 1
    assert len(files(observed)) == 2

    # A route change meanwhile reaches both, each under its own spec.
    observed = dataclasses.replace(observed, routes=[route("r1", topic="elsewhere")])
    observed = applied(observed, plan(observed, open_gate, NOW))
    for name, instances in ((P, 1), (S, 3)):
        config = read_by(observed, name)
        assert config.bridge.spark.executor.instances == instances
        assert config.routes[0].spec.kafka_topic == "elsewhere"

    # The standby runs the new spec: the active's turn. Its old file stays while its old driver may run.
    observed = applied(observed, plan(observed, open_gate, NOW), {S: "second"})
    decided = plan(observed, open_gate, NOW)
    assert [(w.verb, w.name) for w in decided.writes] == [("replace", P)]
    observed = applied(observed, decided)
    assert len(files(observed)) == 2
    assert read_by(observed, P).bridge.spark.executor.instances == 3

    # Resubmitted: nobody reads the old file any more, it goes.
    observed = applied(observed, plan(observed, open_gate, NOW), {P: "second"})
    decided = plan(observed, open_gate, NOW)
    assert [(w.verb, w.name) for w in decided.writes] == [("replace", "simple-config")]
    observed = applied(observed, decided)
    assert len(files(observed)) == 1
    assert plan(observed, open_gate, NOW).writes == []


def test_an_application_of_an_older_operator_keeps_its_one_file_until_its_turn() -> None:
    observed = steady(standby_bridge(), [route("r1")])
    ((key, text),) = files(observed).items()
    observed = dataclasses.replace(
        observed, config_map={**(observed.config_map or {}), "data": {"job.yaml": text}}
    )
    for app in observed.applications:
        app["spec"]["arguments"][1] = "/etc/jmsbridge/job.yaml"
        app["metadata"]["annotations"][naming.ANNOTATION_SPEC_HASH] = "older"
    decided = plan(observed, open_gate, NOW)
    config_map = next(w.body for w in decided.writes if w.kind == "ConfigMap")
    assert config_map["data"] == {"job.yaml": text, key: text}
    assert [w.name for w in decided.writes if w.kind == naming.SPARK_KIND] == [S]  # standby first
