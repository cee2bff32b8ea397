"""pytest fixtures for the Kubernetes API emulator."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from tests.kubeapi.client import KubeApi, serve_kube_api


@pytest.fixture()
def kube_api(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[KubeApi]:
    """A fresh Kubernetes API emulator; `$KUBECONFIG` points at it for the duration of the test."""
    import kubernetes.client
    import kubernetes.config.kube_config

    with serve_kube_api(tmp_path) as kube:
        monkeypatch.setenv("KUBECONFIG", str(kube.kubeconfig))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)  # never the in-cluster config
        # The kubernetes client reads $KUBECONFIG once, at import: make its default follow too.
        monkeypatch.setattr(
            kubernetes.config.kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(kube.kubeconfig)
        )
        yield kube
        # Do not leave the client configured for a server that is about to disappear.
        kubernetes.client.Configuration.set_default(None)
        errors = kube.server_errors
    if errors:
        raise AssertionError(
            f"The Kubernetes API emulator failed {len(errors)} time(s); first: {errors[0]!r}"
        )
