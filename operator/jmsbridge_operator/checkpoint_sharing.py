"""One checkpoint for both instances: what a standby pair needs of its checkpoint storage.

Spark keeps the journal offsets each micro-batch covered in the checkpoint. After a failover the new
active instance must resume from the offsets the old one reached, so both instances must see the same
checkpoint directory. The rendered SparkApplications mount `spark.checkpoint.path` from the claim named
by `spark.checkpoint.persistentVolumeClaim` in both instances; without a claim each pod would get an
`emptyDir` of its own, and a standby taking over would start from an empty checkpoint.

So, with `failover.standby`:

- a claim is required (the spec is refused without one). A checkpoint URL (`s3a://`, `hdfs://`) is not
  accepted instead: the job derives the bridge's directory from the path as a local file path;
- the claim should be `ReadWriteMany`: the two drivers run in different pods, usually on different nodes,
  and both mount it. A `ReadWriteOnce` claim attaches to one node only, so the second instance cannot start
  elsewhere. The condition `CheckpointShared` says whether the claim exists and can be shared.

Pure: the reconciler reads the claim, this module judges it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bridge_job.config import JmsBridge, JmsBridgeSpec
from jmsbridge_operator.condition_catalogue import (
    CHECKPOINT_CLAIM_NOT_FOUND,
    CHECKPOINT_NOT_SHARED,
    CHECKPOINT_SHARED,
    INVALID_SPEC,
    READ_WRITE_MANY,
)
from jmsbridge_operator.conditions import Condition, Problem

CLAIM_FIELD = "spec.spark.checkpoint.persistentVolumeClaim"


def checkpoint_problems(spec: JmsBridgeSpec) -> tuple[Problem, ...]:
    """A standby pair without a claim for its checkpoint cannot share it."""
    if not spec.failover.standby or spec.spark.checkpoint.persistent_volume_claim:
        return ()
    message = (
        f"{CLAIM_FIELD}: failover.standby needs a checkpoint both instances share; name a ReadWriteMany "
        "PersistentVolumeClaim (both instances mount it at spec.spark.checkpoint.path)"
    )
    return (Problem(INVALID_SPEC, CLAIM_FIELD, message),)


def claimed(bridge: JmsBridge) -> str | None:
    """The claim whose sharing the status reports: a standby pair's checkpoint claim."""
    return bridge.spec.spark.checkpoint.persistent_volume_claim if bridge.spec.failover.standby else None


def access_modes(claim: Mapping[str, Any]) -> list[str]:
    """The modes the claim is bound with, else those it asks for."""
    status = claim.get("status") or {}
    modes = status.get("accessModes") or (claim.get("spec") or {}).get("accessModes") or []
    return [str(mode) for mode in modes]


def claim_condition(name: str, namespace: str, claim: Mapping[str, Any] | None) -> Condition:
    """Whether the standby pair's checkpoint claim (`claim`, None when absent) can be shared."""
    where = f"PersistentVolumeClaim {name} in namespace {namespace}"
    if claim is None:
        message = (
            f"{where} not found: both instances mount it for their shared checkpoint ({CLAIM_FIELD}); "
            f"create it with accessModes [{READ_WRITE_MANY}]"
        )
        return Condition(CHECKPOINT_SHARED, "False", CHECKPOINT_CLAIM_NOT_FOUND, message)
    modes = access_modes(claim)
    if READ_WRITE_MANY not in modes:
        message = (
            f"{where} has accessModes [{', '.join(modes)}]: both instances of the standby pair mount it, "
            f"usually from different nodes, so it must be {READ_WRITE_MANY}; create a {READ_WRITE_MANY} "
            f"claim (a storage class that supports it: NFS, CephFS, EFS, Azure Files...) and name it in "
            f"{CLAIM_FIELD}"
        )
        return Condition(CHECKPOINT_SHARED, "False", CHECKPOINT_NOT_SHARED, message)
    message = f"Both instances mount {where} ({READ_WRITE_MANY}) for their checkpoint"
    return Condition(CHECKPOINT_SHARED, "True", READ_WRITE_MANY, message)
