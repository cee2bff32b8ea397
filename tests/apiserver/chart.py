"""The operator under the chart's identity: the chart's ServiceAccount with exactly the chart's RBAC
(ClusterRoles, Roles, bindings, as `helm template` renders them), and the namespaces its Deployment's
command line serves. Whatever the operator asks that this RBAC does not grant is a 403 in the API server's
audit log, which the `operator` fixture fails the test on."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path
from typing import Any
from unittest import mock

import yaml

from bridge_job.kube.api import Kube
from tests.apiserver.client import KubeApi
from tests.apiserver.tools import helm

CHART_DIR = Path(__file__).resolve().parents[2] / "charts" / "jms-bridge-operator"
RELEASE = "jms-bridge-operator"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
# Serving every namespace, and where bridges run there: the chart's defaults serve the release namespace.
ALL_NAMESPACES = ("allNamespaces=true", "bridgeJob.namespaces={apps}")


def render(namespace: str, *values: str) -> list[dict[str, Any]]:
    """The chart's documents for a release in `namespace` with `--set` values."""
    args = [helm(), "template", RELEASE, str(CHART_DIR), "--namespace", namespace]
    for value in values:
        args += ["--set", value]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


@dataclasses.dataclass(frozen=True)
class OperatorIdentity:
    kubeconfig: Path  # the ServiceAccount's token
    user: str  # system:serviceaccount:<namespace>:<name>
    namespaces: tuple[str, ...]  # the Deployment's --namespace options; empty with --all-namespaces


def install_identity(kube: KubeApi, namespace: str, *values: str) -> OperatorIdentity:
    """Apply the chart's RBAC for a release in `namespace` and return the operator's identity."""
    documents = render(namespace, *values)
    rbac = [d for d in documents if d["kind"] in RBAC_KINDS]
    for name in sorted({d["metadata"]["namespace"] for d in rbac if d["metadata"].get("namespace")}):
        kube.ensure_namespace(name)
    kube.apply_manifests(rbac)
    (deployment,) = [d for d in documents if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    account = pod["serviceAccountName"]
    args = pod["containers"][0]["args"]
    served = tuple(arg.split("=", 1)[1] for arg in args if arg.startswith("--namespace="))
    assert served or "--all-namespaces" in args, args
    return OperatorIdentity(
        kubeconfig=kube.control_plane.kubeconfig_for(namespace, account),
        user=f"system:serviceaccount:{namespace}:{account}",
        namespaces=served,
    )


JOB_SERVICE_ACCOUNT = "jms-bridge-job"  # the chart's account of the bridges' Spark pods


def job_kubeconfig(kube: KubeApi, namespace: str, server: str | None = None) -> Path:
    """The identity of a bridge's pods in `namespace` (the chart's job ServiceAccount and Role, installed
    with the operator's RBAC for a release serving that namespace if they are not there yet); `server`:
    the API server through another address (a fault proxy)."""
    if kube.get("v1", "ServiceAccount", JOB_SERVICE_ACCOUNT, namespace) is None:
        install_identity(kube, namespace)
    return kube.control_plane.kubeconfig_for(namespace, JOB_SERVICE_ACCOUNT, server)


def job_client(kube: KubeApi, namespace: str) -> Kube:
    """The job's Kubernetes transport (`bridge_job.kube.Kube`) as the bridge's pods would have it."""
    path = job_kubeconfig(kube, namespace)
    with mock.patch.dict(os.environ, {"KUBECONFIG": str(path)}):
        return Kube.connect()
