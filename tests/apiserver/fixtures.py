"""pytest fixtures of the real API server: one control plane per pytest worker, emptied after each test."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from jmsbridge.control_plane import INSTALL_HINT, ControlPlane, binaries_installed, etcd_seed
from testbed.apiserver.chart import job_kubeconfig, job_service_account
from testbed.apiserver.client import KubeApi
from testbed.apiserver.spark_crd import installed_file

CRD_FILES = (*sorted((Path(__file__).resolve().parents[2] / "crds").glob("*.yaml")), installed_file())
BRIDGE_NAMESPACE = "apps"  # where the tests' bridges run (testbed.resources.NAMESPACE)


def _install_crds(plane: ControlPlane) -> None:
    KubeApi(plane).install_crds(*CRD_FILES)


@pytest.fixture(scope="session")
def control_plane() -> Iterator[KubeApi]:
    """etcd, kube-apiserver and kube-controller-manager for this worker's tests (about 3 s to start), with
    our CRDs and the spark-operator's installed before the garbage collector starts (it would notice
    kinds installed later only in its next discovery, up to 30 s on): stored already in the etcd it starts
    from (`etcd_seed`, made again when a CRD file changes), then checked."""
    if not binaries_installed():
        pytest.fail(f"no Kubernetes control plane to test against: {INSTALL_HINT}", pytrace=False)
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in CRD_FILES)).hexdigest()[:16]
    with ControlPlane(prepare=_install_crds, seed=etcd_seed(f"crds-{digest}", _install_crds)) as plane:
        yield KubeApi(plane)


@pytest.fixture()
def kube_api(control_plane: KubeApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[KubeApi]:
    """The real API server, as its admin; `$KUBECONFIG` points at it for the duration of the test, and
    what the test made is deleted afterwards."""
    import kubernetes.client
    import kubernetes.config.kube_config

    kube = control_plane
    monkeypatch.setenv("KUBECONFIG", str(kube.kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)  # never the in-cluster config
    # The kubernetes client reads $KUBECONFIG once, at import: make its default follow too.
    monkeypatch.setattr(kubernetes.config.kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(kube.kubeconfig))
    kube.begin()
    try:
        yield kube
    finally:
        # Do not leave the client configured for a server that a later test may have replaced.
        kubernetes.client.Configuration.set_default(None)
        kube.reset()


@pytest.fixture()
def as_bridge_job(kube_api: KubeApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This process's Kubernetes clients (and the jobs it starts with `$KUBECONFIG`) act as the pods of the
    bridge `orders` (bridge id `orders`) in `apps`: its own ServiceAccount, Role and bindings, as the operator
    makes them (identity.py), and its free Lease. A request they do not allow fails the test."""
    import kubernetes.config.kube_config

    kube_api.ensure_namespace(BRIDGE_NAMESPACE)
    path = job_kubeconfig(kube_api, BRIDGE_NAMESPACE)
    monkeypatch.setenv("KUBECONFIG", str(path))
    monkeypatch.setattr(kubernetes.config.kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(path))
    yield path
    refused = kube_api.refused(f"system:serviceaccount:{BRIDGE_NAMESPACE}:{job_service_account()}")
    assert not refused, f"the bridge's RBAC refused {len(refused)} request(s): {refused[:5]}"
