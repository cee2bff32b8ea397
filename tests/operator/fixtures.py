"""Fixtures of the operator tests: the real API server with our CRDs and the spark-operator's, and the
real operator on it under the chart's identity.

Registered by tests/conftest.py (`pytest_plugins`), so that the e2e tests in tests/e2e/ have them too."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import jmsbridge_operator.main  # noqa: F401  (below)
import pytest
from jmsbridge_operator import crdgen

from testbed.apiserver.chart import OperatorIdentity, install_identity
from testbed.apiserver.client import KubeApi, KubeApiError
from testbed.apiserver.spark_crd import installed_file
from testbed.resources import GROUP_VERSION, NAMESPACE
from tests.apiserver.operator_runner import run_operator
from tests.operator.helpers import CRD_DIR, load_yaml

# Importing it registers the handlers, with the options of the environment then (`main.OPTIONS`): imported
# above, as each test process starts, so that no test's environment decides them for the tests after it
# (`jmsbridge operator`, which test_cli.py runs with kopf.run stubbed, sets its options first).
OPERATOR_MODULE = "jmsbridge_operator.main"
KAFKA_CHECKS_ENV = "JMSBRIDGE_KAFKA_CHECKS"


@pytest.fixture()
def cluster(kube_api: KubeApi) -> KubeApi:
    """The API server with our CRDs (crds/), the spark-operator's, and the `apps` namespace."""
    kube_api.install_crds(*sorted(CRD_DIR.glob("*.yaml")), installed_file())
    kube_api.ensure_namespace(NAMESPACE)
    return kube_api


@contextlib.contextmanager
def chart_operator(
    cluster: KubeApi, *values: str, release_namespace: str = NAMESPACE
) -> Iterator[OperatorIdentity]:
    """The real operator (kopf, our handlers) as the chart deploys it: its ServiceAccount and RBAC, its
    namespaces. A request the chart's RBAC does not allow fails the test."""
    identity = install_identity(cluster, release_namespace, *values)
    with run_operator(
        cluster,
        OPERATOR_MODULE,
        namespaces=identity.namespaces,
        clusterwide=not identity.namespaces,
        kubeconfig=identity.kubeconfig,
    ):
        yield identity
    refused = cluster.refused(identity.user)
    assert not refused, f"the chart's RBAC refused the operator {len(refused)} request(s): {refused[:5]}"


@pytest.fixture()
def no_kafka_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Operators started in this test do not check Kafka.

    The bridges of most tests name a Kafka (`kafka:9092`) that does not exist. The checks have their own
    tests against a real broker (`test_kafka_gate.py`).
    """
    monkeypatch.setenv(KAFKA_CHECKS_ENV, "false")


@pytest.fixture()
def operator(cluster: KubeApi, no_kafka_checks: None) -> Iterator[KubeApi]:
    """The real operator running against the cluster for the whole test, under the chart's identity."""
    with chart_operator(cluster):
        yield cluster


# Each refused by one CEL rule of its CRD (and nothing else): how `without_validation_rules` sees the rules
# come and go. Dry runs, in `default`, so nothing is stored and no operator sees them.
_PROBES = (
    {
        "apiVersion": GROUP_VERSION,
        "kind": "JmsBridge",
        "metadata": {"name": "cel-probe", "namespace": "default"},
        "spec": {
            "jms": {"connectionFactory": {"className": "a.B"}, "sources": [{"queue": "q", "topic": "t"}]},
            "kafka": {"bootstrapServers": "kafka:9092"},
        },
    },
    {
        "apiVersion": GROUP_VERSION,
        "kind": "JmsBridgeRoute",
        "metadata": {"name": "cel-probe", "namespace": "default"},
        "spec": {"bridgeRef": {"name": "b"}, "direction": "kafkaToJms", "kafkaTopic": "t"},
    },
)


def _refused(kube: KubeApi, probe: dict[str, Any]) -> bool:
    try:
        kube.create(copy.deepcopy(probe), dry_run=True)
    except KubeApiError as e:
        assert e.status == 422, e
        return True
    return False


@contextlib.contextmanager
def without_validation_rules(kube: KubeApi) -> Iterator[None]:
    """Store what our CRDs' CEL rules refuse, as an API server older than 1.25 does, or one whose CRD got
    the rule after the object was stored: our CRDs without their rules for the block, then with them
    again. For tests of what the operator itself refuses."""
    files = sorted(CRD_DIR.glob("*.yaml"))
    crds = [doc for path in files for doc in load_yaml(path) if doc.get("kind") == "CustomResourceDefinition"]
    for crd in crds:
        kube.replace(crdgen.without(crd, "x-kubernetes-validations"))
    kube.wait_for(lambda: not any(_refused(kube, p) for p in _PROBES), what="the CEL rules gone")
    kube.wait_listed(crds)
    try:
        yield
    finally:
        for crd in crds:
            kube.replace(crd)
        kube.wait_for(lambda: all(_refused(kube, p) for p in _PROBES), what="the CEL rules back")
        kube.wait_listed(crds)  # what runs next lists and watches them at once
