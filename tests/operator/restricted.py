"""The Pod Security Standard `restricted` (Kubernetes 1.25 and later), as a pure check of a pod spec.

What the API server's PodSecurity admission refuses in a namespace labelled
`pod-security.kubernetes.io/enforce: restricted`, from https://kubernetes.io/docs/concepts/security/pod-security-standards/:
the baseline rules, then the restricted ones. Each violation names the pod or container and the field.
`pods_of` builds the driver's and the executors' pod specs the spark-operator makes from a
SparkApplication (its webhook applies `podSecurityContext`, `securityContext`, `initContainers`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
RESTRICTED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
RESTRICTED_VOLUMES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
SECCOMP_TYPES = frozenset({"RuntimeDefault", "Localhost"})


def _containers(pod: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for kind in ("initContainers", "containers", "ephemeralContainers"):
        for container in pod.get(kind) or []:
            yield f"{kind}[{container.get('name')}]", container


def _unconfined(where: str, context: Mapping[str, Any]) -> Iterator[str]:
    """What the pod's and each container's securityContext may not say (baseline)."""
    if (context.get("windowsOptions") or {}).get("hostProcess"):
        yield f"{where}.windowsOptions.hostProcess: true"
    for profile in ("seccompProfile", "appArmorProfile"):
        if (context.get(profile) or {}).get("type") == "Unconfined":
            yield f"{where}.{profile}.type: Unconfined"
    yield from _selinux(where, context)


def _baseline_container(where: str, container: Mapping[str, Any]) -> Iterator[str]:
    own = container.get("securityContext") or {}
    yield from _unconfined(f"{where}.securityContext", own)
    if own.get("privileged"):
        yield f"{where}.securityContext.privileged: true"
    added = set((own.get("capabilities") or {}).get("add") or []) - BASELINE_CAPABILITIES
    if added:
        yield f"{where}.securityContext.capabilities.add: {sorted(added)}"
    if own.get("procMount", "Default") != "Default":
        yield f"{where}.securityContext.procMount: {own['procMount']}"
    for port in container.get("ports") or []:
        if port.get("hostPort"):
            yield f"{where}.ports: hostPort {port['hostPort']}"


def _baseline(pod: Mapping[str, Any]) -> Iterator[str]:
    context = pod.get("securityContext") or {}
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(field):
            yield f"{field}: true"
    yield from _unconfined("securityContext", context)
    for sysctl in context.get("sysctls") or []:
        if sysctl.get("name") not in SAFE_SYSCTLS:
            yield f"securityContext.sysctls: {sysctl.get('name')} is not a safe sysctl"
    for where, container in _containers(pod):
        yield from _baseline_container(where, container)
    for volume in pod.get("volumes") or []:
        if "hostPath" in volume:
            yield f"volumes[{volume.get('name')}]: hostPath"


def _selinux(where: str, context: Mapping[str, Any]) -> Iterator[str]:
    options = context.get("seLinuxOptions") or {}
    if options.get("type", "") not in SELINUX_TYPES:
        yield f"{where}.seLinuxOptions.type: {options['type']}"
    for field in ("user", "role"):
        if options.get(field):
            yield f"{where}.seLinuxOptions.{field}: set"


def _restricted(pod: Mapping[str, Any]) -> Iterator[str]:
    context = pod.get("securityContext") or {}
    for volume in pod.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            yield f"volumes[{volume.get('name')}]: {sorted(kinds - RESTRICTED_VOLUMES)} not allowed"
    if context.get("runAsUser") == 0:
        yield "securityContext.runAsUser: 0"
    pod_seccomp = (context.get("seccompProfile") or {}).get("type")
    for where, container in _containers(pod):
        own = container.get("securityContext") or {}
        if own.get("allowPrivilegeEscalation") is not False:
            yield f"{where}.securityContext.allowPrivilegeEscalation: must be false"
        non_root = own.get("runAsNonRoot", context.get("runAsNonRoot"))
        if non_root is not True:
            yield f"{where}.securityContext.runAsNonRoot: must be true (here or in the pod's)"
        if own.get("runAsUser") == 0:
            yield f"{where}.securityContext.runAsUser: 0"
        seccomp = (own.get("seccompProfile") or {}).get("type", pod_seccomp)
        if seccomp not in SECCOMP_TYPES:
            yield f"{where}.securityContext.seccompProfile.type: must be RuntimeDefault or Localhost"
        capabilities = own.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            yield f"{where}.securityContext.capabilities.drop: must include ALL"
        added = set(capabilities.get("add") or []) - RESTRICTED_CAPABILITIES
        if added:
            yield f"{where}.securityContext.capabilities.add: {sorted(added)} (NET_BIND_SERVICE only)"


def violations(pod: Mapping[str, Any]) -> list[str]:
    """What PodSecurity `restricted` refuses of a pod spec (empty: it admits the pod)."""
    return sorted(set(_baseline(pod)) | set(_restricted(pod)))


def pods_of(application: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The pod specs of a SparkApplication's driver and executors, as the spark-operator makes them."""
    spec = application["spec"]
    pods = {}
    for role in ("driver", "executor"):
        part = spec.get(role) or {}
        container: dict[str, Any] = {"name": f"spark-kubernetes-{role}", "image": spec.get("image")}
        for field in ("securityContext", "ports", "env", "volumeMounts"):
            if field in part:
                container[field] = part[field]
        pod: dict[str, Any] = {"containers": [container], "volumes": spec.get("volumes") or []}
        if "initContainers" in part:
            pod["initContainers"] = part["initContainers"]
        if "podSecurityContext" in part:
            pod["securityContext"] = part["podSecurityContext"]
        if part.get("hostNetwork"):
            pod["hostNetwork"] = True
        pods[role] = pod
    return pods
