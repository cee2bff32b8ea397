"""The tests' helpers over the real API server: `reset` leaves nothing a test made for the next one, whoever
made it; `install_crds` puts back CRDs someone changed; a kept-alive connection that was closed is opened
again."""

from __future__ import annotations

import json
import socket

from jmsbridge_operator import crdgen

from testbed.apiserver.client import KubeApi
from tests.apiserver.fixtures import CRD_FILES


def _config_map(name: str, namespace: str, **metadata: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **metadata},
    }


def test_a_reset_empties_what_was_made_and_keeps_the_namespaces(control_plane: KubeApi) -> None:
    kube = control_plane
    kube.reset()  # what earlier tests of this worker left is not this test's
    kube.ensure_namespace("reset-a")
    labels = {"team": "a", "pod-security.kubernetes.io/enforce": "restricted"}
    kube.patch(
        "v1", "Namespace", "reset-a", None, {"metadata": {"labels": labels, "annotations": {"n": "1"}}}
    )
    kube.create(_config_map("plain", "reset-a"))
    kube.create(_config_map("held", "reset-a", finalizers=["tests.jmsbridge.dev/hold"]))  # its owner is gone
    kube.create(_config_map("left", "default"))
    kube.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "reset-a"}})
    kube.create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "job", "namespace": "reset-a"}}
    )
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "reset-a"},
    }
    kube.create(role)
    kube.reset()

    assert [c["metadata"]["name"] for c in kube.list("v1", "ConfigMap", "reset-a")] == []
    assert kube.list("v1", "Secret", "reset-a") == []
    accounts = {a["metadata"]["name"] for a in kube.list("v1", "ServiceAccount", "reset-a")}
    assert accounts <= {"default"}, "a namespace keeps only its own account, which its controller makes"
    assert kube.get("v1", "ConfigMap", "left", "default") is None
    assert kube.get("v1", "Service", "kubernetes", "default") is not None  # the cluster's own stays
    assert kube.get("rbac.authorization.k8s.io/v1", "ClusterRole", "reset-a") is None
    assert kube.get("rbac.authorization.k8s.io/v1", "ClusterRole", "admin") is not None  # there at the start
    namespace = kube.get("v1", "Namespace", "reset-a")
    assert namespace is not None, "a namespace stays, emptied"
    assert namespace["metadata"]["labels"] == {"kubernetes.io/metadata.name": "reset-a"}
    assert not namespace["metadata"].get("annotations")


def test_a_reset_deletes_what_was_made_after_the_one_before_it_read_the_log(control_plane: KubeApi) -> None:
    """Every write is read by exactly one reset: one made after a reset (by a test that came without
    `kube_api`, or late) is deleted by the next."""
    kube = control_plane
    kube.ensure_namespace("reset-b")
    kube.reset()
    kube.create(_config_map("late", "reset-b"))
    kube.reset()
    assert kube.list("v1", "ConfigMap", "reset-b") == []


def test_crds_someone_changed_are_installed_again(control_plane: KubeApi) -> None:
    """`install_crds` asks nothing when the CRDs are as it left them; one that was replaced since is
    put back."""
    kube = control_plane
    kube.install_crds(*CRD_FILES)
    name = "jmsbridges.jmsbridge.dev"
    stored = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    assert stored is not None and "x-kubernetes-validations" in json.dumps(stored["spec"])
    kube.replace(crdgen.without(stored, "x-kubernetes-validations"))
    kube.install_crds(*CRD_FILES)
    again = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    assert again is not None and "x-kubernetes-validations" in json.dumps(again["spec"])


def test_a_kept_connection_that_was_closed_is_opened_again(control_plane: KubeApi) -> None:
    plane = control_plane.control_plane
    assert plane.request("GET", "/version")["major"] == "1"
    kept = plane._connections.https
    kept.sock.shutdown(socket.SHUT_RDWR)  # as the server closes an idle connection
    assert plane.request("GET", "/version")["major"] == "1"
    assert plane._connections.https is not kept
