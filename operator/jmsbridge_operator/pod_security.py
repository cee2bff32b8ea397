"""The security contexts of a bridge's Spark pods: the Pod Security Standard `restricted` unless the bridge
says otherwise (`spec.spark.pod.securityContext`, `spec.spark.pod.containerSecurityContext`).

A namespace labelled `pod-security.kubernetes.io/enforce: restricted` refuses a pod that does not say, for
every container and init container, that it runs as non-root, cannot escalate privileges, drops every
capability and uses a seccomp profile. The spark-operator passes the SparkApplication's `podSecurityContext`
and `securityContext` to the driver and executor pods, and init containers as written, so the operator
renders all of them. What is set at pod level (the user, seccomp) covers the init containers too: a jar
image (`busybox`) whose user is root then runs as the Spark image's user, which can write the jar volume.

A field the bridge sets replaces the default of that field, whole (`capabilities`, `seccompProfile`);
the others keep their defaults. Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from bridge_job.config import ContainerSecurityContext, PodSecurityContext

# The Spark image's user and group (apache/spark's Dockerfile: `spark`, 185), also the job image's.
SPARK_UID = 185

POD_DEFAULTS: dict[str, Any] = {
    "runAsNonRoot": True,
    "runAsUser": SPARK_UID,
    "runAsGroup": SPARK_UID,
    # The checkpoint claim and the emptyDirs writable by the job; ownership changed only when the volume's
    # root is not the group's yet, not for every file of a large checkpoint at every start.
    "fsGroup": SPARK_UID,
    "fsGroupChangePolicy": "OnRootMismatch",
    "seccompProfile": {"type": "RuntimeDefault"},
}

CONTAINER_DEFAULTS: dict[str, Any] = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    # What the job and Spark write goes to volumes: /tmp (an emptyDir, render.TMP_VOLUME; the Spark
    # image's entrypoint writes there too), Spark's local dirs (emptyDirs of Spark's own), the checkpoints.
    "readOnlyRootFilesystem": True,
}


def _over(
    defaults: dict[str, Any], given: PodSecurityContext | ContainerSecurityContext | None
) -> dict[str, Any]:
    return {**copy.deepcopy(defaults), **(given.dump() if given is not None else {})}


def pod_security_context(given: PodSecurityContext | None) -> dict[str, Any]:
    """The driver's and executors' `podSecurityContext`."""
    return _over(POD_DEFAULTS, given)


def container_security_context(given: ContainerSecurityContext | None) -> dict[str, Any]:
    """The `securityContext` of the Spark containers and of the jar-copy init containers."""
    return _over(CONTAINER_DEFAULTS, given)


# The volume sources the restricted profile refuses (Kubernetes' Pod Security Standards allow only
# configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected and secret): hostPath
# above all, a node's files are no bridge's business. A source Kubernetes does not know is for the
# SparkApplication's schema check to name.
UNRESTRICTED_VOLUME_SOURCES = frozenset(
    {
        "hostPath",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "gitRepo",
        "nfs",
        "iscsi",
        "glusterfs",
        "rbd",
        "flexVolume",
        "cinder",
        "cephfs",
        "flocker",
        "fc",
        "azureFile",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "portworxVolume",
        "scaleIO",
        "storageos",
        "photonPersistentDisk",
        "image",
    }
)


def beyond_restricted(
    pod: PodSecurityContext | None,
    container: ContainerSecurityContext | None,
    volume_sources: dict[str, str],
) -> list[tuple[str, str]]:
    """What the pods of these settings would do that the Pod Security Standard `restricted` forbids, as
    (field under spec.spark.pod, what) pairs. `volume_sources` maps each volume's name to its source."""
    pod_context, container_context = pod_security_context(pod), container_security_context(container)
    found: list[tuple[str, str]] = []
    for field, context in (("securityContext", pod_context), ("containerSecurityContext", container_context)):
        if context.get("runAsUser") == 0:
            found.append((f"{field}.runAsUser", "runs as root (uid 0)"))
        if context.get("runAsNonRoot") is False:
            found.append((f"{field}.runAsNonRoot", "allows running as root"))
    seccomp = (container_context.get("seccompProfile") or pod_context.get("seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        found.append(("securityContext.seccompProfile", f"seccomp profile {seccomp or 'none'}"))
    if container_context.get("allowPrivilegeEscalation") is not False:
        found.append(("containerSecurityContext.allowPrivilegeEscalation", "allows privilege escalation"))
    capabilities = container_context.get("capabilities") or {}
    if "ALL" not in (capabilities.get("drop") or []):
        found.append(("containerSecurityContext.capabilities.drop", "keeps capabilities (drop ALL)"))
    added = sorted(set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"})
    if added:
        found.append(("containerSecurityContext.capabilities.add", f"adds capabilities {', '.join(added)}"))
    for name, source in sorted(volume_sources.items()):
        if source in UNRESTRICTED_VOLUME_SOURCES:
            found.append(("volumes", f"volume {name} is a {source} volume"))
    return found
