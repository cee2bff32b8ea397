"""What a user does with kubectl, through the real `kubectl` against the real API server and operator:
apply the examples, see the printer columns, wait for Ready, describe, annotate, explain; and what the
CRDs refuse at `kubectl apply` (unknown fields, CEL rules), as a real API server refuses it.

kubectl is the one scripts/install-helm.sh installs (testbed/apiserver/tools.py); without it the tests skip,
except in CI, where they fail.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.apiserver import tools
from testbed.apiserver.client import KubeApi
from testbed.resources import CHECKPOINT_CLAIM, GROUP_VERSION, NAMESPACE
from tests.operator.helpers import EXAMPLES, claim, load_yaml
from tests.operator.test_operator import View

pytestmark = pytest.mark.timeout(120)


class Kubectl:
    def __init__(self, kube: KubeApi, home: Path) -> None:
        self.binary = tools.kubectl()
        home.mkdir(exist_ok=True)  # kubectl's discovery and OpenAPI cache, one per test
        self.env = {**os.environ, "KUBECONFIG": str(kube.kubeconfig), "HOME": str(home)}

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [self.binary, "-n", NAMESPACE, *args], env=self.env, capture_output=True, text=True, timeout=60
        )
        if check:
            assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result

    def __call__(self, *args: str) -> str:
        return self.run(*args).stdout


@pytest.fixture()
def kubectl(cluster: KubeApi, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster, tmp_path / "home")


def test_the_examples_through_kubectl(operator: KubeApi, kubectl: Kubectl) -> None:
    view = View(operator)
    applied = kubectl("apply", "-f", str(EXAMPLES))  # validated by the server, no --validate=false
    assert "jmsbridge.jmsbridge.dev/orders created" in applied
    assert "jmsbridgeroute.jmsbridge.dev/orders-to-kafka created" in applied
    view.create(claim(CHECKPOINT_CLAIM.replace("bridge", "orders-bridge")))
    view.wait(lambda: len(view.apps()) == 2, "the two SparkApplications")
    view.play_spark("orders-primary", "RUNNING", attempts=1)
    view.play_spark("orders-secondary", "RUNNING", attempts=1)
    view.play_lease("orders", "primary/orders-primary-driver")
    kubectl("wait", "jmsbridge/orders", "--for=condition=Ready", "--timeout=30s")

    header, row = kubectl("get", "jmsbridge").splitlines()
    assert header.split() == ["NAME", "READY", "STATUS", "ACTIVE", "ROUTES", "AGE"]
    assert row.split()[:2] == ["orders", "True"] and "orders-primary" in row.split()
    wide = kubectl("get", "jb", "orders", "-o", "wide").splitlines()[0].split()
    assert wide[-3:] == ["REASON", "FAILOVERS", "SUSPENDED"]  # the columns of priority 1
    both = kubectl("get", "jms-bridge")  # the category: bridges and routes
    assert "jmsbridge.jmsbridge.dev/orders" in both and "jmsbridgeroute.jmsbridge.dev/prices-to-kafka" in both
    routes = kubectl("get", "jmsbridgeroutes").splitlines()
    assert routes[0].split()[:5] == ["NAME", "BRIDGE", "ORDER", "DIRECTION", "TOPIC"]
    assert len(routes) == 4
    assert "orders-config" in kubectl("get", "configmaps")

    described = kubectl("describe", "jmsbridge", "orders")
    assert re.search(r"Reason:\s+Running\s+Status:\s+True\s+Type:\s+Ready", described), described
    assert "ApplicationCreated" in described  # its Events, from jmsbridge-operator

    kubectl("annotate", "jmsbridge", "orders", "jmsbridge.dev/reset-checkpoint=latest")
    view.wait(
        lambda: (
            ((view.bridge("orders") or {}).get("status") or {}).get("checkpointReset", {}).get("to")
            == "latest"
        ),
        "the reset requested",
    )


def test_kubectl_apply_is_refused_what_the_crds_refuse(
    cluster: KubeApi, kubectl: Kubectl, tmp_path: Path
) -> None:
    bridge = (EXAMPLES / "bridge.yaml").read_text()
    typo = tmp_path / "typo.yaml"
    typo.write_text(
        bridge.replace("  delivery: exactlyOnce", "  delivery: exactlyOnce\n  deliverry: atLeastOnce")
    )
    refused = kubectl.run("apply", "-f", str(typo), check=False)
    assert refused.returncode != 0
    assert 'unknown field "spec.deliverry"' in refused.stderr

    no_sasl = tmp_path / "no-sasl.yaml"
    no_sasl.write_text(bridge.replace("    sasl:\n", "    saslx:\n"))
    refused = kubectl.run("apply", "-f", str(no_sasl), "--validate=false", check=False)  # pruned, then CEL
    assert refused.returncode != 0
    assert "spec.kafka.sasl" in refused.stderr and "needs `sasl`" in refused.stderr
    assert cluster.get("jmsbridge.dev/v1alpha1", "JmsBridge", "orders", NAMESPACE) is None


def test_kubectl_explain_answers(cluster: KubeApi, kubectl: Kubectl) -> None:
    explained = kubectl("explain", "jmsbridge.spec.failover")
    assert "KIND:       JmsBridge" in explained
    assert "standby" in explained and "leaseDurationSeconds" in explained


def _broken(change: Any) -> dict[str, Any]:
    bridge = copy.deepcopy(load_yaml(EXAMPLES.parent / "bridge.yaml")[0])
    change(bridge["spec"])
    return bridge


BAD_SPECS = [
    ("no-sources", lambda s: s["jms"].update(sources=[]), "spec.jms.sources", "should have at least 1 items"),
    (
        "queue-and-topic",
        lambda s: s["jms"]["sources"][0].update(topic="prices"),
        "spec.jms.sources[0]",
        "set exactly one of `queue` or `topic`",
    ),
    (
        "unknown-on-soft-failure",
        lambda s: s.setdefault("routing", {}).update(onSoftFailure="ignore"),
        "spec.routing.onSoftFailure",
        'Unsupported value: "ignore"',
    ),
    (
        "negative-executors",
        lambda s: s.setdefault("spark", {}).setdefault("executor", {}).update(instances=-1),
        "spec.spark.executor.instances",
        "should be greater than or equal to 1",
    ),
    (
        "empty-bootstrap-servers",
        lambda s: s["kafka"].update(bootstrapServers=""),
        "spec.kafka.bootstrapServers",
        "should be at least 1 chars long",
    ),
]


@pytest.mark.parametrize(
    ("change", "field", "says"), [c[1:] for c in BAD_SPECS], ids=[c[0] for c in BAD_SPECS]
)
def test_a_bad_spec_is_refused_by_the_server_naming_the_field(
    cluster: KubeApi, kubectl: Kubectl, tmp_path: Path, change: Any, field: str, says: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_broken(change)))
    refused = kubectl.run("apply", "-f", str(path), check=False)
    assert refused.returncode != 0
    assert field in refused.stderr and says in refused.stderr, refused.stderr
    assert cluster.get(GROUP_VERSION, "JmsBridge", "orders", NAMESPACE) is None
