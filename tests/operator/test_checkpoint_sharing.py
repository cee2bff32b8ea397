"""A standby pair's checkpoint: a claim is required, and the status says whether it can be shared (pure)."""

from __future__ import annotations

import copy

from jmsbridge_operator.acceptance import validate
from jmsbridge_operator.checkpoint_sharing import claim_condition
from jmsbridge_operator.kafka_checks.gate import open_gate
from jmsbridge_operator.planning import Observed, plan
from jmsbridge_operator.status import find_condition

from testbed.resources import simple_bridge
from tests.operator.helpers import claim

NOW = "2026-01-01T00:00:00Z"


def test_standby_without_a_claim_is_refused_with_the_field_to_set() -> None:
    body = simple_bridge(standby=True)
    del body["spec"]["spark"]
    problems = validate(body, []).problems
    assert [(p.reason, p.subject) for p in problems] == [
        ("InvalidSpec", "spec.spark.checkpoint.persistentVolumeClaim")
    ]
    assert "ReadWriteMany PersistentVolumeClaim" in problems[0].message
    # A checkpoint URL is no shared storage the job can use instead.
    body["spec"]["spark"] = {"checkpoint": {"path": "s3a://bucket/checkpoints"}}
    assert [p.subject for p in validate(body, []).problems] == ["spec.spark.checkpoint.persistentVolumeClaim"]


def test_a_single_instance_needs_no_claim() -> None:
    assert validate(simple_bridge(), []).problems == ()


def test_the_claim_must_exist_and_be_read_write_many() -> None:
    absent = claim_condition("cp", "apps", None)
    assert (absent.status, absent.reason) == ("False", "CheckpointClaimNotFound")
    assert "PersistentVolumeClaim cp in namespace apps not found" in absent.message

    single = claim_condition("cp", "apps", claim("cp", "ReadWriteOnce"))
    assert (single.status, single.reason) == ("False", "CheckpointNotShared")
    assert "accessModes [ReadWriteOnce]" in single.message and "must be ReadWriteMany" in single.message

    shared = claim_condition("cp", "apps", claim("cp", "ReadWriteOnce", "ReadWriteMany"))
    assert (shared.status, shared.reason) == ("True", "ReadWriteMany")


def test_the_bound_access_modes_count_over_the_requested_ones() -> None:
    bound = claim("cp")
    bound["status"] = {"phase": "Bound", "accessModes": ["ReadWriteOnce"]}
    assert claim_condition("cp", "apps", bound).reason == "CheckpointNotShared"


def test_the_bridge_status_says_whether_its_checkpoint_is_shared() -> None:
    body = simple_bridge(standby=True)
    body["metadata"].update(uid="u", generation=1)
    single = plan(Observed(body, claim=claim("bridge-checkpoints", "ReadWriteOnce")), open_gate, NOW)
    condition = find_condition(single.status, "CheckpointShared")
    assert condition is not None and condition["reason"] == "CheckpointNotShared"
    # It is a warning: the applications are still created (on one node a ReadWriteOnce claim works).
    assert [w.kind for w in single.writes] == ["ConfigMap", "SparkApplication", "SparkApplication"]
    shared = plan(Observed(copy.deepcopy(body), claim=claim()), open_gate, NOW)
    assert find_condition(shared.status, "CheckpointShared")["status"] == "True"  # type: ignore[index]
    alone = plan(Observed(simple_bridge()), open_gate, NOW)
    assert find_condition(alone.status, "CheckpointShared") is None
