"""The security contexts a bridge may set on its Spark pods (`spec.spark.pod`).

The operator renders every driver, executor and jar-copy init container compliant with the Pod Security
Standard `restricted` (jmsbridge_operator/pod_security.py). These models are what a bridge may change of
that, field by field: a field set here replaces the operator's default for it, a field left out keeps it.
They are a subset of Kubernetes' PodSecurityContext and SecurityContext: the fields a Spark pod needs
(who it runs as, the groups of its volumes, seccomp, privilege escalation, capabilities), named and typed
as Kubernetes has them, so that the spark-operator's models take them as written.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from bridge_job.config.schema import CamelModel

Id = Annotated[int, Field(ge=0, le=2**31 - 1)]


class SeccompProfile(CamelModel):
    type: Literal["RuntimeDefault", "Localhost", "Unconfined"] = Field(
        description="RuntimeDefault (the container runtime's profile), Localhost (a profile on the node) "
        "or Unconfined (none: the restricted profile refuses it)."
    )
    localhost_profile: str | None = Field(
        default=None, description="With type Localhost: the profile's path, relative to the kubelet's."
    )


class Capabilities(CamelModel):
    add: Annotated[list[str], Field(max_length=32)] | None = Field(
        default=None, description="Capabilities added (the restricted profile allows NET_BIND_SERVICE only)."
    )
    drop: Annotated[list[str], Field(max_length=64)] | None = Field(
        default=None, description="Capabilities dropped (the restricted profile needs ALL)."
    )


class PodSecurityContext(CamelModel):
    """The pod-level securityContext of every driver and executor pod."""

    run_as_user: Id | None = Field(
        default=None, description="The uid of every container; defaults to 185, the Spark image's user."
    )
    run_as_group: Id | None = Field(default=None, description="The primary gid; defaults to 185.")
    run_as_non_root: bool | None = Field(
        default=None, description="Refuse to start a container as uid 0; defaults to true."
    )
    fs_group: Id | None = Field(
        default=None,
        description="The group that owns the pods' volumes (the checkpoint claim): defaults to 185.",
    )
    fs_group_change_policy: Literal["OnRootMismatch", "Always"] | None = Field(
        default=None,
        description="When the kubelet changes the volumes' ownership to fsGroup; defaults to "
        "OnRootMismatch (not the whole checkpoint at every start).",
    )
    supplemental_groups: Annotated[list[Id], Field(max_length=32)] | None = Field(
        default=None, description="More groups of every container's process."
    )
    seccomp_profile: SeccompProfile | None = Field(
        default=None, description="The pods' seccomp profile; defaults to RuntimeDefault."
    )


class ContainerSecurityContext(CamelModel):
    """The securityContext of the driver's and executors' Spark containers and of the jar-copy init
    containers (`jms.clientLibraries`)."""

    allow_privilege_escalation: bool | None = Field(
        default=None, description="Whether a process may gain more privileges (setuid); defaults to false."
    )
    capabilities: Capabilities | None = Field(
        default=None, description="Replaces the default, which drops ALL capabilities."
    )
    read_only_root_filesystem: bool | None = Field(
        default=None,
        description="Mount the container's root filesystem read-only; true by default (/tmp is an "
        "emptyDir, Spark's local dirs are its own emptyDirs).",
    )
    run_as_user: Id | None = Field(default=None, description="The uid, instead of the pod's.")
    run_as_group: Id | None = Field(default=None, description="The primary gid, instead of the pod's.")
    run_as_non_root: bool | None = Field(default=None, description="Instead of the pod's.")
    seccomp_profile: SeccompProfile | None = Field(default=None, description="Instead of the pod's.")
