"""The operator under the chart's identity: the chart's ServiceAccount with exactly the chart's RBAC
(ClusterRoles, Roles, bindings, as `helm template` renders them), and the namespaces its Deployment's
command line serves. Whatever the operator asks that this RBAC does not grant is a 403 in the API server's
audit log, which the `operator` fixture fails the test on."""

from __future__ import annotations

import dataclasses
import functools
import os
import subprocess
from pathlib import Path
from typing import Any
from unittest import mock

from jmsbridge_operator import naming
from jmsbridge_operator.identity import identity

from bridge_job.config import JmsBridge, job_config
from bridge_job.kube.api import Kube
from testbed.apiserver.client import KubeApi, yaml_documents
from testbed.apiserver.tools import helm

CHART_DIR = Path(__file__).resolve().parents[2] / "charts" / "jms-bridge-operator"
RELEASE = "jms-bridge-operator"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
# Serving every namespace, and where bridges run there: the chart's defaults serve the release namespace.
ALL_NAMESPACES = ("allNamespaces=true", "bridgeJob.namespaces={apps}")


def render(namespace: str, *values: str) -> list[dict[str, Any]]:
    """The chart's documents for a release in `namespace` with `--set` values (fresh objects each call)."""
    return yaml_documents(_template(namespace, values))


@functools.lru_cache(maxsize=32)
def _template(namespace: str, values: tuple[str, ...]) -> str:
    """`helm template`, once per process for the same values: the chart does not change while tests run,
    and the operator tests install its RBAC about seventy times."""
    args = [helm(), "template", RELEASE, str(CHART_DIR), "--namespace", namespace]
    for value in values:
        args += ["--set", value]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


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


JOB_BRIDGE = "orders"  # the bridge whose pods the job's tests act as, unless they name another


def job_service_account(bridge: str = JOB_BRIDGE) -> str:
    return naming.job_service_account(bridge)


def install_job_identity(kube: KubeApi, namespace: str, bridge: str, bridge_id: str | None) -> None:
    """A bridge's identity as the operator makes it (identity.py: its own ServiceAccount, Role, bindings,
    its free Lease; no owner: the bridge itself is not there), and the chart's ClusterRole it is bound to
    (with the operator's RBAC for a release serving `namespace`, if not there yet). `bridge_id`: None for
    the default of a bridge of that name and namespace, as the job's config has it."""
    if kube.get("rbac.authorization.k8s.io/v1", "ClusterRole", naming.JOB_CLUSTER_ROLE) is None:
        install_identity(kube, namespace)
    body: dict[str, Any] = {
        "apiVersion": naming.BRIDGE_API_VERSION,
        "kind": "JmsBridge",
        "metadata": {"name": bridge, "namespace": namespace},
        "spec": {
            "jms": {
                "connectionFactory": {
                    "className": "org.apache.activemq.ActiveMQConnectionFactory",
                    "properties": {"brokerURL": "tcp://amq:61616"},
                },
                "sources": [{"queue": "in.orders"}],
            },
            "kafka": {"bootstrapServers": "kafka:9092"},
            "failover": {"standby": True},
            "spark": {"checkpoint": {"persistentVolumeClaim": "checkpoints"}},
        },
    }
    if bridge_id is not None:
        body["spec"]["bridgeId"] = bridge_id
    model = JmsBridge.model_validate(body)
    made = identity(model, job_config(model, []))
    kube.apply_manifests([*made.objects, *([made.lease] if made.lease else [])])


def job_kubeconfig(
    kube: KubeApi,
    namespace: str,
    server: str | None = None,
    bridge: str = JOB_BRIDGE,
    bridge_id: str | None = None,
    *,
    operator: bool = False,
) -> Path:
    """The identity of bridge `bridge`'s pods in `namespace`, made as the operator would if not there yet
    (`bridge_id`: see `install_job_identity`; the default bridge's is its name); `operator`: the operator
    under test makes it (wait for it, make none); `server`: the API server through another address (a
    fault proxy)."""
    account = job_service_account(bridge)
    if operator:
        kube.wait_for(lambda: kube.get("v1", "ServiceAccount", account, namespace), what=account)
    elif kube.get("v1", "ServiceAccount", account, namespace) is None:
        install_job_identity(kube, namespace, bridge, JOB_BRIDGE if bridge == JOB_BRIDGE else bridge_id)
    return kube.control_plane.kubeconfig_for(namespace, account, server)


def job_client(kube: KubeApi, namespace: str, bridge: str = JOB_BRIDGE, *, operator: bool = False) -> Kube:
    """The job's Kubernetes transport (`bridge_job.kube.Kube`) as the bridge's pods would have it;
    `operator`: the operator under test makes the bridge's identity (wait for it, make none)."""
    path = job_kubeconfig(kube, namespace, bridge=bridge, operator=operator)
    with mock.patch.dict(os.environ, {"KUBECONFIG": str(path)}):
        return Kube.connect()
