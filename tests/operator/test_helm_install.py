"""A newcomer's path on a real API server, as the README and docs/operator.md tell it: `helm install` with
the default values, `kubectl apply -f examples/`, the operator at work under the identity the chart gave it,
`helm upgrade` to serve every namespace, `helm uninstall`.

No kubelet runs here, so the chart's Deployment never gets a pod: the test runs the operator the way that
pod would, `jmsbridge operator` with the Deployment's own arguments and environment and a token of the
chart's ServiceAccount, and plays the spark-operator by writing SparkApplication status. Every request the
operator makes that the chart's RBAC does not allow is a 403 in the API server's audit log, and fails the
test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jmsbridge.local import free_port
from testbed.apiserver import tools
from testbed.apiserver.chart import CHART_DIR
from testbed.apiserver.client import KubeApi
from testbed.brokers import KafkaBroker
from testbed.resources import GROUP_VERSION
from tests.operator.helpers import EXAMPLES, SPARK_VERSION, claim
from tests.operator.test_kubectl import Kubectl
from tests.operator.test_operator import View

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

RELEASE = "jms-bridge"  # as docs/operator.md installs it
RELEASE_LABEL = f"app.kubernetes.io/instance={RELEASE}"
NAMESPACE = "apps"  # the examples' namespace, and the release's: the default values serve it alone


@pytest.fixture()
def kubectl(kube_api: KubeApi, tmp_path: Path) -> Kubectl:
    return Kubectl(kube_api, tmp_path / "home")


def helm(user: Kubectl, *args: str) -> str:
    """helm as a user runs it, with the kubeconfig and home of their `kubectl`."""
    result = subprocess.run(
        [tools.helm(), *args], env=user.env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, f"helm {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


class DeployedOperator:
    """`jmsbridge operator` as the chart's Deployment runs it (its args, its env, its ServiceAccount)."""

    def __init__(self, kube: KubeApi, namespace: str, work: Path) -> None:
        (deployment,) = kube.list("apps/v1", "Deployment", namespace, label_selector=RELEASE_LABEL)
        pod = deployment["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        self.user = f"system:serviceaccount:{namespace}:{pod['serviceAccountName']}"
        kubeconfig = kube.control_plane.kubeconfig_for(namespace, pod["serviceAccountName"])
        self.args = [_free_ports(arg) for arg in container["args"]]
        env = {var["name"]: var.get("value", "") for var in container.get("env", [])}
        env["POD_NAMESPACE"] = namespace  # the Downward API's fieldRef, as the kubelet would fill it in
        self.log_path = work / f"operator-{len(list(work.glob('operator-*.log')))}.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jmsbridge", *container["command"][1:], *self.args],
                env={**os.environ, **env, "KUBECONFIG": str(kubeconfig), "HOSTNAME": "jms-bridge-operator-0"},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def _free_ports(arg: str) -> str:
    """The pod's own ports are this machine's: another test's operator may hold 8080 or 9090."""
    if arg.startswith("--liveness="):
        return f"--liveness=http://127.0.0.1:{free_port()}/healthz"
    if arg.startswith("--metrics-port="):
        return f"--metrics-port={free_port()}"
    return arg


@pytest.fixture()
def deployed(kube_api: KubeApi, tmp_path: Path) -> Iterator[list[DeployedOperator]]:
    """Start the operator of an installed release with `start(namespace)`; all stopped at the end."""
    started: list[DeployedOperator] = []
    yield started
    for operator in started:
        operator.stop()
    for operator in started:
        refused = kube_api.refused(operator.user)
        assert not refused, f"the chart's RBAC refused {len(refused)} request(s): {refused[:5]}"
        assert " 403 " not in operator.log() and "Forbidden" not in operator.log(), operator.log()[-3000:]


def cluster_roles(kube: KubeApi) -> list[str]:
    roles = kube.list("rbac.authorization.k8s.io/v1", "ClusterRole", label_selector=RELEASE_LABEL)
    return [role["metadata"]["name"] for role in roles]


def pointed_at(kafka: KafkaBroker) -> dict[str, Any]:
    """The example bridge's Kafka made this machine's broker (no SASL: the suite's broker has none)."""
    return {
        "spec": {
            "kafka": {"bootstrapServers": kafka.bootstrap, "securityProtocol": "PLAINTEXT", "sasl": None}
        }
    }


def test_helm_install_then_the_examples_then_uninstall(
    kube_api: KubeApi, kubectl: Kubectl, deployed: list[DeployedOperator], kafka: KafkaBroker, tmp_path: Path
) -> None:
    view = View(kube_api)
    installed = helm(kubectl, "install", RELEASE, str(CHART_DIR), "-n", NAMESPACE, "--create-namespace")
    assert "STATUS: deployed" in installed
    # the default: reading namespaces and CRDs, nothing more; and jms-bridge-job, bound to no one yet
    assert sorted(cluster_roles(kube_api)) == ["jms-bridge-jms-bridge-operator-discovery", "jms-bridge-job"]

    # Every example is accepted by the server itself, as written.
    for example in sorted(EXAMPLES.parent.rglob("*.yaml")):
        applied = kubectl.run("apply", "--dry-run=server", "-f", str(example), check=False)
        assert applied.returncode == 0, f"{example}: {applied.stderr}"

    # The cluster example, aimed at this machine's Kafka, with the claim its standby pair shares.
    kafka.create_topics(
        "orders.jms-bridge.journal", "orders", "prices", "order-confirmations", "jms-bridge-dlq"
    )
    kubectl("apply", "--server-side", "-f", str(EXAMPLES))  # client-side: test_kubectl.py
    kube_api.patch(GROUP_VERSION, "JmsBridge", "orders", NAMESPACE, pointed_at(kafka))
    kube_api.create(claim("orders-bridge-checkpoints"))

    deployed.append(DeployedOperator(kube_api, NAMESPACE, tmp_path))
    kube_api.wait_for(
        lambda: len(kube_api.list(SPARK_VERSION, "SparkApplication", NAMESPACE)) == 2,
        timeout=60,
        what="the standby pair's two SparkApplications",
    )
    for app in ("orders-primary", "orders-secondary"):
        view.play_spark(app, "RUNNING")
    # The bridge's own identity, made by the operator under the installed RBAC (its pods run as it):
    assert kube_api.get("v1", "ServiceAccount", "orders-job", NAMESPACE) is not None
    assert kube_api.get("v1", "Secret", "orders-key", NAMESPACE) is not None
    view.play_lease("orders", "primary/orders-primary-driver")  # as the active job takes the free Lease
    kubectl("wait", "--for=condition=Ready", "jmsbridge/orders", "--timeout=60s")
    # The operator's Kafka checks, on the real broker:
    assert view.conditions(view.bridge("orders"))["KafkaReady"][0] == "True"
    header, row = kubectl("get", "jmsbridges").splitlines()
    assert header.split() == ["NAME", "READY", "STATUS", "ACTIVE", "ROUTES", "AGE"]
    assert row.split()[:2] == ["orders", "True"]

    # Deleting the bridge removes what it owned.
    kubectl("delete", "jmsbridge", "orders", "--timeout=60s")
    kube_api.wait_for(
        lambda: (
            not kube_api.list(SPARK_VERSION, "SparkApplication", NAMESPACE)
            and kube_api.get("v1", "ConfigMap", "orders-config", NAMESPACE) is None
        ),
        timeout=60,
        what="the bridge's SparkApplications and ConfigMap gone",
    )

    # Every namespace: an upgrade gives the operator a ClusterRole instead of the namespace's Role, and
    # rolls its pod (here: the operator stops, and starts again with the new Deployment's arguments).
    deployed[-1].stop()
    upgraded = helm(kubectl,
        "upgrade", RELEASE, str(CHART_DIR), "-n", NAMESPACE, "--reuse-values",
        "--set", "allNamespaces=true", "--set", f"bridgeJob.namespaces={{{NAMESPACE}}}",
    )  # fmt: skip
    assert "has been upgraded" in upgraded
    assert len(cluster_roles(kube_api)) == 3  # and now every namespace's bridges
    deployed.append(DeployedOperator(kube_api, NAMESPACE, tmp_path))
    assert "--all-namespaces" in deployed[-1].args
    kubectl("apply", "-f", str(EXAMPLES / "bridge.yaml"))
    kube_api.patch(GROUP_VERSION, "JmsBridge", "orders", NAMESPACE, pointed_at(kafka))
    kube_api.wait_for(
        lambda: len(kube_api.list(SPARK_VERSION, "SparkApplication", NAMESPACE)) == 2,
        timeout=60,
        what="the bridge's SparkApplications from the operator serving every namespace",
    )
    kubectl("delete", "jmsbridge", "orders", "--timeout=60s")  # its finalizer, while the operator runs
    deployed[-1].stop()

    helm(kubectl, "uninstall", RELEASE, "-n", NAMESPACE)
    assert cluster_roles(kube_api) == []
    assert kube_api.list("apps/v1", "Deployment", NAMESPACE, label_selector=RELEASE_LABEL) == []
