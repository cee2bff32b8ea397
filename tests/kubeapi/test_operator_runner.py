"""The real kopf runtime against the emulator, over HTTP: a toy operator from create to delete."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from tests.kubeapi.client import KubeApi
from tests.kubeapi.operator_runner import run_operator

# Not imported from the toy operator: importing an operator module here, at collection, would register
# its handlers in kopf's default registry instead of the one `run_operator` gives it.
TOY_OPERATOR = "tests.kubeapi.toy_operator"
FINALIZER = "kubeapi.example.com/finalizer"
TOY_CRD = pathlib.Path(__file__).parent / "toy_crd.yaml"
TOY = "kubeapi.example.com/v1"


@pytest.fixture()
def kube(kube_api: KubeApi) -> KubeApi:
    kube_api.install_crds(TOY_CRD)
    return kube_api


def create_toy(kube: KubeApi, name: str, namespace: str = "apps", message: str = "hello") -> dict[str, Any]:
    body = {"apiVersion": TOY, "kind": "Toy", "metadata": {"name": name, "namespace": namespace}}
    return kube.create({**body, "spec": {"message": message}})


def reconciled(kube: KubeApi, name: str, generation: int, namespace: str = "apps") -> dict[str, Any]:
    def observed() -> dict[str, Any] | None:
        obj = kube.get(TOY, "Toy", name, namespace)
        return obj if obj and obj.get("status", {}).get("observedGeneration") == generation else None

    return kube.wait_for(observed, what=f"toy {name} reconciled at generation {generation}")


def events_about(kube: KubeApi, name: str) -> list[str]:
    return [
        event["reason"]
        for event in kube.list("v1", "Event", "apps")
        if event["involvedObject"]["name"] == name
    ]


def test_toy_operator_from_create_to_delete(kube: KubeApi) -> None:
    with run_operator(kube, TOY_OPERATOR):
        created = create_toy(kube, "toy")
        toy = reconciled(kube, "toy", generation=1)
        assert toy["metadata"]["finalizers"] == [FINALIZER]
        assert toy["status"] == {
            "child": "toy-child",
            "message": "hello",
            "observedGeneration": 1,
            "lastReason": "create",
        }
        annotations = toy["metadata"]["annotations"]
        assert (
            "kubeapi.example.com/last-handled-configuration" in annotations
        )  # kopf's state is not in status
        child = kube.get("v1", "ConfigMap", "toy-child", "apps")
        assert child is not None
        assert child["data"] == {"message": "hello"}
        assert [(ref["kind"], ref["uid"]) for ref in child["metadata"]["ownerReferences"]] == [
            ("Toy", created["metadata"]["uid"])
        ]
        kube.wait_for(lambda: "Reconciled" in events_about(kube, "toy"), what="an event from kopf")

        kube.patch(TOY, "Toy", "toy", "apps", {"spec": {"message": "changed"}})
        toy = reconciled(kube, "toy", generation=2)
        assert toy["status"]["lastReason"] == "update"
        assert (kube.get("v1", "ConfigMap", "toy-child", "apps") or {})["data"] == {"message": "changed"}

        kube.delete(TOY, "Toy", "toy", "apps")
        kube.wait_for(lambda: kube.get(TOY, "Toy", "toy", "apps") is None, what="the finalizer released")
        assert kube.get("v1", "ConfigMap", "toy-child", "apps") is None  # collected with its owner
        kube.wait_for(lambda: "Finalized" in events_about(kube, "toy"), what="the deletion handler's event")
    assert kube.requests_by_agent["kopf"] > 0


def test_operator_restart_creates_nothing_twice(kube: KubeApi) -> None:
    with run_operator(kube, TOY_OPERATOR):
        create_toy(kube, "toy")
        reconciled(kube, "toy", generation=1)
    child = kube.get("v1", "ConfigMap", "toy-child", "apps")
    assert child is not None
    child_versions = len(kube.history("v1", "ConfigMap", "toy-child", "apps"))

    with run_operator(kube, TOY_OPERATOR):
        kube.wait_for(
            lambda: (
                (kube.get(TOY, "Toy", "toy", "apps") or {}).get("status", {}).get("lastReason") == "resume"
            ),
            what="the restarted operator resuming the toy",
        )
    children = kube.list("v1", "ConfigMap", "apps", label_selector="toy=toy")
    assert [c["metadata"]["uid"] for c in children] == [child["metadata"]["uid"]]
    assert len(kube.history("v1", "ConfigMap", "toy-child", "apps")) == child_versions  # not even touched


def test_namespaced_operator_serves_only_its_namespaces(kube: KubeApi) -> None:
    with run_operator(kube, TOY_OPERATOR, namespaces=["apps"], clusterwide=False):
        create_toy(kube, "ignored", namespace="elsewhere")
        create_toy(kube, "served", namespace="apps")
        reconciled(kube, "served", generation=1)
        ignored = kube.get(TOY, "Toy", "ignored", "elsewhere")
    assert ignored is not None
    assert "finalizers" not in ignored["metadata"]


def test_a_crash_of_the_operator_is_reraised(kube: KubeApi) -> None:
    with (
        pytest.raises(RuntimeError, match="crashed") as error,
        run_operator(kube, "tests.kubeapi.crashing_operator"),
    ):
        pass
    assert type(error.value.__cause__).__name__ == "ActivityError"  # kopf's, for a failed startup handler
