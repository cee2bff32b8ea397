"""Fixtures of the operator tests: an emulated cluster with our CRDs, and the real operator on it.

Registered by tests/conftest.py (`pytest_plugins`), so that the e2e tests in tests/e2e/ have them too."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kubeapi.client import KubeApi
from tests.kubeapi.operator_runner import run_operator
from tests.operator.helpers import CRD_DIR, NAMESPACE, spark_crd_file

OPERATOR_MODULE = "jmsbridge_operator"
KAFKA_CHECKS_ENV = "JMSBRIDGE_KAFKA_CHECKS"


@pytest.fixture()
def cluster(kube_api: KubeApi) -> KubeApi:
    """The emulator with our CRDs (crds/), the spark-operator's (from its models), the `apps` namespace."""
    kube_api.install_crds(*sorted(CRD_DIR.glob("*.yaml")), spark_crd_file())
    kube_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    return kube_api


@pytest.fixture()
def no_kafka_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Operators started in this test do not check Kafka.

    The bridges of most tests name a Kafka (`kafka:9092`) that does not exist. The checks have their own
    tests against a real broker (`test_kafka_gate.py`).
    """
    monkeypatch.setenv(KAFKA_CHECKS_ENV, "false")


@pytest.fixture()
def operator(cluster: KubeApi, no_kafka_checks: None) -> Iterator[KubeApi]:
    """The real operator (kopf, our handlers) running against the cluster for the whole test."""
    with run_operator(cluster, OPERATOR_MODULE):
        yield cluster
