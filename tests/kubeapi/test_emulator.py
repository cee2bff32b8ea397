"""The emulator's API behaviour, through HTTP as any client sees it."""

from __future__ import annotations

import http.client
import json
import pathlib
import re
import urllib.parse
from collections.abc import Iterator
from typing import Any

import kmock
import pytest

from tests.kubeapi.client import KubeApi, KubeApiError, serve_kube_api
from tests.kubeapi.spark_crd import spark_crd_file

HERE = pathlib.Path(__file__).parent
TOY_CRD = HERE / "toy_crd.yaml"
TOY = "kubeapi.example.com/v1"
TOYS = f"/apis/{TOY}/namespaces/apps/toys"
CONFIGMAPS = "/api/v1/namespaces/apps/configmaps"
MERGE = "application/merge-patch+json"


def configmap(name: str, namespace: str = "apps", **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **metadata},
    }


def toy(name: str, message: str = "hi", **metadata: Any) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "apps", **metadata}
    return {"apiVersion": TOY, "kind": "Toy", "metadata": metadata, "spec": {"message": message}}


def http_call(kube: KubeApi, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """A raw request, for the status code."""
    connection = http.client.HTTPConnection(urllib.parse.urlsplit(kube.url).netloc, timeout=30)
    try:
        payload = None if body is None else json.dumps(body)
        connection.request(method, path, body=payload, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


@pytest.fixture()
def toys(kube_api: KubeApi) -> KubeApi:
    kube_api.install_crds(TOY_CRD)
    return kube_api


# --- discovery ---


def test_discovery_of_builtin_kinds(kube_api: KubeApi) -> None:
    assert kube_api.request("GET", "/api")["versions"] == ["v1"]
    core = {r["name"]: r for r in kube_api.request("GET", "/api/v1")["resources"]}
    assert core["namespaces"]["namespaced"] is False
    assert core["configmaps"]["namespaced"] is True
    assert {"events", "secrets", "serviceaccounts", "pods", "pods/status"} <= set(core)
    groups = {g["name"]: g for g in kube_api.request("GET", "/apis")["groups"]}
    assert {"events.k8s.io", "coordination.k8s.io", "apiextensions.k8s.io"} <= set(groups)
    assert groups["coordination.k8s.io"]["preferredVersion"]["version"] == "v1"
    assert kube_api.request("GET", "/apis/coordination.k8s.io")["versions"][0]["version"] == "v1"
    leases = kube_api.request("GET", "/apis/coordination.k8s.io/v1")["resources"]
    assert [(r["name"], r["kind"]) for r in leases] == [("leases", "Lease")]
    with pytest.raises(KubeApiError) as error:
        kube_api.request("GET", "/apis/unknown.example.com/v1")
    assert error.value.status == 404


def test_discovery_names_groups_and_subresources_as_the_api_server_does(kube_api: KubeApi) -> None:
    kube_api.install_crds(TOY_CRD)
    assert kube_api.request("GET", "/api/v1")["groupVersion"] == "v1"  # kubectl resolves kinds by it
    toys = {r["name"]: r for r in kube_api.request("GET", f"/apis/{TOY}")["resources"]}
    status = toys["toys/status"]
    assert (status["singularName"], status["verbs"]) == ("", ["get", "patch", "update"])
    assert "shortNames" not in status and "categories" not in status  # else `ty` names two resources


GADGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.kubeapi.example.com"},
    "spec": {
        "group": "kubeapi.example.com",
        "scope": "Namespaced",
        "names": {"kind": "Gadget", "plural": "gadgets"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {
                        "name": "Ok",
                        "type": "string",
                        "jsonPath": '.status.conditions[?(@.type=="Ok")].status',
                    },
                ],
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "size": {"type": "integer", "default": 1},
                                    "name": {"type": "string"},
                                },
                                "x-kubernetes-validations": [
                                    {"rule": "self.size < 10", "message": "too big", "fieldPath": ".size"}
                                ],
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}
GADGETS = "/apis/kubeapi.example.com/v1/namespaces/apps/gadgets"


def gadget(name: str, **spec: Any) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "apps"}
    return {"apiVersion": "kubeapi.example.com/v1", "kind": "Gadget", "metadata": metadata, "spec": spec}


def test_custom_resources_are_defaulted_pruned_and_checked_by_their_rules(kube_api: KubeApi) -> None:
    kube_api.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", GADGET_CRD)
    stored = kube_api.create(gadget("a", colour="red"))
    assert stored["spec"] == {"size": 1}  # defaulted, the unknown field pruned
    with pytest.raises(KubeApiError) as error:
        kube_api.request("POST", f"{GADGETS}?fieldValidation=Strict", gadget("b", colour="red"))
    assert (error.value.status, error.value.body["message"]) == (
        400,
        'strict decoding error: unknown field "spec.colour"',
    )
    with pytest.raises(KubeApiError) as error:
        kube_api.create(gadget("c", size=12))
    assert error.value.status == 422
    assert error.value.body["details"]["causes"][0]["field"] == "spec.size"
    assert "too big" in error.value.body["message"]

    # Stored before the rule was kept (the rule is newer, or a server before 1.25): what does not change
    # is not judged again (validation ratcheting), what changes is.
    with kube_api.without_validation_rules():
        kube_api.create(gadget("old", size=12))
    kube_api.patch("kubeapi.example.com/v1", "Gadget", "old", "apps", {"metadata": {"labels": {"a": "b"}}})
    kube_api.patch_status(
        "kubeapi.example.com/v1", "Gadget", "old", "apps", {"conditions": [{"type": "Ok", "status": "True"}]}
    )
    with pytest.raises(KubeApiError) as error:
        kube_api.patch("kubeapi.example.com/v1", "Gadget", "old", "apps", {"spec": {"size": 11}})
    assert error.value.status == 422


def test_tables_show_the_printer_columns(kube_api: KubeApi) -> None:
    kube_api.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", GADGET_CRD)
    kube_api.create(gadget("a", size=3))
    kube_api.patch_status(
        "kubeapi.example.com/v1", "Gadget", "a", "apps", {"conditions": [{"type": "Ok", "status": "True"}]}
    )
    kube_api.create(gadget("b"))
    accept = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}
    table = kube_api.request("GET", GADGETS, headers=accept)
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size", "Ok"]
    assert [row["cells"] for row in table["rows"]] == [["a", 3, "True"], ["b", 1, None]]
    one = kube_api.request("GET", f"{GADGETS}/a", headers=accept)
    assert [row["cells"][0] for row in one["rows"]] == ["a"]
    configmaps = kube_api.request("GET", CONFIGMAPS, headers=accept)
    assert [c["name"] for c in configmaps["columnDefinitions"]] == ["Name", "Age"]


def test_openapi_v3_describes_the_kinds_as_kubectl_reads_them(kube_api: KubeApi) -> None:
    kube_api.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", GADGET_CRD)
    index = kube_api.request("GET", "/openapi/v3")["paths"]
    assert {"api/v1", "apis/kubeapi.example.com/v1"} <= set(index)
    document = kube_api.request("GET", index["apis/kubeapi.example.com/v1"]["serverRelativeURL"])
    schema = document["components"]["schemas"]["com.example.kubeapi.v1.Gadget"]
    assert schema["properties"]["spec"]["properties"]["size"]["default"] == 1
    patch = document["paths"]["/apis/kubeapi.example.com/v1/namespaces/{namespace}/gadgets/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"]["kind"] == "Gadget"
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]  # the server validates fields


def test_crds_from_yaml_become_discoverable(kube_api: KubeApi) -> None:
    kube_api.install_crds(TOY_CRD, spark_crd_file())
    toys = {r["name"]: r for r in kube_api.request("GET", f"/apis/{TOY}")["resources"]}
    assert toys["toys"]["kind"] == "Toy"
    assert toys["toys"]["singularName"] == "toy"
    assert toys["toys"]["shortNames"] == ["ty"]
    assert toys["toys"]["categories"] == ["toys"]
    assert toys["toys"]["namespaced"] is True
    assert "toys/status" in toys
    spark = {r["name"]: r for r in kube_api.request("GET", "/apis/sparkoperator.k8s.io/v1beta2")["resources"]}
    assert spark["sparkapplications"]["shortNames"] == ["sparkapp"]
    assert "sparkapplications/status" in spark
    groups = [g["name"] for g in kube_api.request("GET", "/apis")["groups"]]
    assert {"kubeapi.example.com", "sparkoperator.k8s.io"} <= set(groups)
    crd = kube_api.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "toys.kubeapi.example.com")
    assert crd is not None
    assert {c["type"]: c["status"] for c in crd["status"]["conditions"]}["Established"] == "True"


def test_installing_crds_again_replaces_them(toys: KubeApi) -> None:
    toys.create(toy("a"))
    toys.install_crds(TOY_CRD)
    assert [t["metadata"]["name"] for t in toys.list(TOY, "Toy")] == ["a"]


def test_deleting_a_crd_removes_its_kind_and_objects(toys: KubeApi) -> None:
    toys.create(toy("a"))
    toys.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", "toys.kubeapi.example.com")
    with pytest.raises(KubeApiError) as error:
        toys.request("GET", f"/apis/{TOY}")
    assert error.value.status == 404
    toys.install_crds(TOY_CRD)
    assert toys.list(TOY, "Toy") == []


# --- objects ---


def test_create_answers_201_with_server_set_metadata(toys: KubeApi) -> None:
    status, created = http_call(toys, "POST", TOYS, toy("a"))
    assert status == 201
    metadata = created["metadata"]
    assert re.fullmatch(r"[0-9a-f-]{36}", metadata["uid"])
    assert isinstance(metadata["resourceVersion"], str)
    assert metadata["generation"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", metadata["creationTimestamp"])
    second = toys.create(toy("b"))
    assert int(second["metadata"]["resourceVersion"]) > int(metadata["resourceVersion"])
    assert second["metadata"]["uid"] != metadata["uid"]


def test_create_of_a_taken_name_is_409_already_exists(kube_api: KubeApi) -> None:
    kube_api.create(configmap("a"))
    status, body = http_call(kube_api, "POST", CONFIGMAPS, configmap("a"))
    assert (status, body["kind"], body["reason"], body["code"]) == (409, "Status", "AlreadyExists", 409)


def test_generate_name(kube_api: KubeApi) -> None:
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": "toy-event-", "namespace": "apps"},
        "involvedObject": {"kind": "Toy", "name": "a", "namespace": "apps"},
        "reason": "Tested",
        "message": "an event",
    }
    first, second = kube_api.create(event), kube_api.create(event)
    assert re.fullmatch(r"toy-event-[a-z0-9]{5}", first["metadata"]["name"])
    assert first["metadata"]["name"] != second["metadata"]["name"]
    assert len(kube_api.list("v1", "Event", "apps")) == 2
    new_event = {**event, "apiVersion": "events.k8s.io/v1", "note": "a new-style event"}
    assert kube_api.create(new_event)["metadata"]["name"].startswith("toy-event-")


def test_get_of_a_missing_object_is_404_with_a_status(kube_api: KubeApi) -> None:
    status, body = http_call(kube_api, "GET", f"{CONFIGMAPS}/missing")
    assert status == 404
    assert body["kind"] == "Status"
    assert body["reason"] == "NotFound"
    assert body["details"]["name"] == "missing"
    assert body["message"] == 'configmaps "missing" not found'
    assert kube_api.get("v1", "ConfigMap", "missing", "apps") is None


def test_invalid_names_and_labels_are_rejected(kube_api: KubeApi) -> None:
    for bad in (
        configmap("Upper"),
        configmap("a", labels={"app": "has space"}),
        configmap("b", labels={"n": 1}),
    ):
        with pytest.raises(KubeApiError) as error:
            kube_api.create(bad)
        assert error.value.status in (400, 422)


def test_namespaces_are_created_on_first_use(kube_api: KubeApi) -> None:
    names = [ns["metadata"]["name"] for ns in kube_api.list("v1", "Namespace")]
    assert "default" in names
    assert "fresh" not in names
    kube_api.create(configmap("a", namespace="fresh"))
    assert kube_api.get("v1", "Namespace", "fresh") is not None


# --- listing ---


def test_list_per_namespace_and_across_namespaces(kube_api: KubeApi) -> None:
    kube_api.create(configmap("a", namespace="one"))
    kube_api.create(configmap("b", namespace="two"))
    assert [cm["metadata"]["name"] for cm in kube_api.list("v1", "ConfigMap", "one")] == ["a"]
    assert [cm["metadata"]["name"] for cm in kube_api.list("v1", "ConfigMap")] == ["a", "b"]
    listing = kube_api.request("GET", "/api/v1/configmaps")
    assert listing["kind"] == "ConfigMapList"
    assert int(listing["metadata"]["resourceVersion"]) >= int(
        listing["items"][-1]["metadata"]["resourceVersion"]
    )


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["web-1", "web-2"]),
        ("app==web,tier=front", ["web-1"]),
        ("app!=web", ["db", "plain"]),
        ("app in (web, db)", ["db", "web-1", "web-2"]),
        ("app notin (web)", ["db", "plain"]),
        ("tier", ["db", "web-1"]),
        ("!tier", ["plain", "web-2"]),
        ("app,!tier", ["web-2"]),
    ],
)
def test_list_with_label_selectors(kube_api: KubeApi, selector: str, expected: list[str]) -> None:
    kube_api.create(configmap("web-1", labels={"app": "web", "tier": "front"}))
    kube_api.create(configmap("web-2", labels={"app": "web"}))
    kube_api.create(configmap("db", labels={"app": "db", "tier": "back"}))
    kube_api.create(configmap("plain"))
    found = kube_api.list("v1", "ConfigMap", "apps", label_selector=selector)
    assert [cm["metadata"]["name"] for cm in found] == expected


def test_list_with_field_selectors_and_pages(kube_api: KubeApi) -> None:
    for namespace in ("one", "two"):
        for name in ("a", "b", "c"):
            kube_api.create(configmap(name, namespace=namespace))
    by_name = kube_api.request("GET", "/api/v1/configmaps?fieldSelector=metadata.name%3Db")["items"]
    assert [(cm["metadata"]["namespace"], cm["metadata"]["name"]) for cm in by_name] == [
        ("one", "b"),
        ("two", "b"),
    ]
    query = "fieldSelector=metadata.namespace%3Dtwo,metadata.name!%3Da"
    by_namespace = kube_api.request("GET", f"/api/v1/configmaps?{query}")["items"]
    assert [cm["metadata"]["name"] for cm in by_namespace] == ["b", "c"]
    first = kube_api.request("GET", "/api/v1/namespaces/one/configmaps?limit=2")
    assert [cm["metadata"]["name"] for cm in first["items"]] == ["a", "b"]
    token = urllib.parse.quote(first["metadata"]["continue"])
    rest = kube_api.request("GET", f"/api/v1/namespaces/one/configmaps?limit=2&continue={token}")
    assert [cm["metadata"]["name"] for cm in rest["items"]] == ["c"]
    assert "continue" not in rest["metadata"]


# --- replacing and patching ---


def test_put_replaces_and_rejects_a_stale_resource_version(toys: KubeApi) -> None:
    created = toys.create(toy("a"))
    replaced = toys.request("PUT", f"{TOYS}/a", {**created, "spec": {"message": "new"}})
    assert replaced["spec"] == {"message": "new"}
    assert replaced["metadata"]["generation"] == 2
    assert replaced["metadata"]["uid"] == created["metadata"]["uid"]
    with pytest.raises(KubeApiError) as error:
        toys.request("PUT", f"{TOYS}/a", {**created, "spec": {"message": "lost update"}})
    assert (error.value.status, error.value.reason) == (409, "Conflict")
    without_version = toy("a", "blind")
    with pytest.raises(KubeApiError) as error:
        toys.request("PUT", f"{TOYS}/a", without_version)
    assert error.value.status == 422  # custom resources need a resourceVersion to be replaced


def test_lease_renewals_by_put(kube_api: KubeApi) -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "bridge", "namespace": "apps"},
        "spec": {
            "holderIdentity": "a",
            "leaseDurationSeconds": 10,
            "renewTime": "2025-01-01T00:00:00.000000Z",
        },
    }
    path = "/apis/coordination.k8s.io/v1/namespaces/apps/leases/bridge"
    current = kube_api.create(lease)
    for second in range(1, 4):
        current["spec"]["renewTime"] = f"2025-01-01T00:00:0{second}.000000Z"
        current = kube_api.request("PUT", path, current)
    assert current["spec"]["renewTime"] == "2025-01-01T00:00:03.000000Z"
    stale = kube_api.history("coordination.k8s.io/v1", "Lease", "bridge", "apps")[1]
    assert stale is not None
    with pytest.raises(KubeApiError) as error:
        kube_api.request("PUT", path, {**stale, "spec": {**stale["spec"], "holderIdentity": "b"}})
    assert error.value.status == 409


def test_merge_patch_and_generation(toys: KubeApi) -> None:
    toys.create(toy("a", labels={"keep": "yes", "drop": "yes"}))
    patched = toys.patch(TOY, "Toy", "a", "apps", {"metadata": {"labels": {"drop": None}}})
    assert patched["metadata"]["labels"] == {"keep": "yes"}
    assert patched["metadata"]["generation"] == 1  # metadata is not the spec
    patched = toys.patch(TOY, "Toy", "a", "apps", {"spec": {"message": "changed"}})
    assert patched["metadata"]["generation"] == 2
    again = toys.patch(TOY, "Toy", "a", "apps", {"spec": {"message": "changed"}})
    assert again["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]  # no-op
    stale = {"metadata": {"resourceVersion": "1"}, "spec": {"message": "lost"}}
    with pytest.raises(KubeApiError) as error:
        toys.patch(TOY, "Toy", "a", "apps", stale)
    assert error.value.status == 409


def test_json_patch_strategic_merge_patch_and_unknown_patch_types(toys: KubeApi) -> None:
    created = toys.create(toy("a"))
    version = created["metadata"]["resourceVersion"]
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": version},
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/x"]},
    ]
    patched = toys.request("PATCH", f"{TOYS}/a", ops, content_type="application/json-patch+json")
    assert patched["metadata"]["finalizers"] == ["example.com/x"]
    with pytest.raises(KubeApiError) as error:  # the test op now fails: the version has changed
        toys.request("PATCH", f"{TOYS}/a", ops, content_type="application/json-patch+json")
    assert error.value.status == 422
    strategic = {"spec": {"message": "smp"}}
    patched = toys.request(
        "PATCH", f"{TOYS}/a", strategic, content_type="application/strategic-merge-patch+json"
    )
    assert patched["spec"]["message"] == "smp"
    with pytest.raises(KubeApiError) as error:
        toys.request("PATCH", f"{TOYS}/a", strategic, content_type="text/plain")
    assert error.value.status == 415


def test_server_side_apply_creates_and_updates(kube_api: KubeApi) -> None:
    path = f"{CONFIGMAPS}/applied?fieldManager=tests"
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  k: v1\n"
    connection = http.client.HTTPConnection(urllib.parse.urlsplit(kube_api.url).netloc, timeout=30)
    for expected_status, value in ((201, "v1"), (200, "v2")):
        body = manifest.replace("v1", value)
        connection.request("PATCH", path, body=body, headers={"Content-Type": "application/apply-patch+yaml"})
        response = connection.getresponse()
        assert (response.status, json.loads(response.read())["data"]) == (expected_status, {"k": value})
    connection.close()


def test_status_subresource(toys: KubeApi) -> None:
    toys.create({**toy("a"), "status": {"phase": "ignored on create"}})
    assert "status" not in (toys.get(TOY, "Toy", "a", "apps") or {})
    both = {"spec": {"message": "ignored"}, "status": {"phase": "Ready"}}
    patched = toys.request("PATCH", f"{TOYS}/a/status", both, content_type=MERGE)
    assert patched["status"] == {"phase": "Ready"}
    assert patched["spec"]["message"] == "hi"
    assert patched["metadata"]["generation"] == 1
    patched = toys.patch(
        TOY, "Toy", "a", "apps", {"status": {"phase": "ignored"}, "spec": {"message": "new"}}
    )
    assert patched["status"] == {"phase": "Ready"}
    assert patched["spec"]["message"] == "new"
    replaced = toys.request("PUT", f"{TOYS}/a/status", {**patched, "status": {"phase": "Replaced"}})
    assert replaced["status"] == {"phase": "Replaced"}
    assert toys.patch_status(TOY, "Toy", "a", "apps", {"extra": 1})["status"] == {
        "phase": "Replaced",
        "extra": 1,
    }
    with pytest.raises(KubeApiError) as error:
        toys.request("PATCH", f"{CONFIGMAPS}/a/status", {}, content_type=MERGE)
    assert error.value.status == 404


def test_status_is_plain_content_without_the_subresource(kube_api: KubeApi) -> None:
    crd = kube_api.request("GET", "/apis/apiextensions.k8s.io/v1")  # the CRD kind is served
    assert crd["resources"]
    definition: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "plains.kubeapi.example.com"},
        "spec": {
            "group": "kubeapi.example.com",
            "scope": "Cluster",
            "names": {"kind": "Plain", "plural": "plains"},
            "versions": [{"name": "v1alpha1", "served": True, "storage": True}],
        },
    }
    kube_api.create(definition)
    plain = {"apiVersion": "kubeapi.example.com/v1alpha1", "kind": "Plain", "metadata": {"name": "p"}}
    created = kube_api.create({**plain, "status": {"phase": "kept"}})
    assert created["status"] == {"phase": "kept"}
    assert "namespace" not in created["metadata"]
    assert (
        kube_api.patch_status("kubeapi.example.com/v1alpha1", "Plain", "p", None, {"n": 1})["status"]["n"]
        == 1
    )


# --- deleting ---


def test_finalizers_hold_the_deletion(toys: KubeApi) -> None:
    toys.create(toy("a", finalizers=["example.com/hold"]))
    toys.delete(TOY, "Toy", "a", "apps")
    held = toys.get(TOY, "Toy", "a", "apps")
    assert held is not None
    assert held["metadata"]["deletionTimestamp"]
    with pytest.raises(KubeApiError) as error:
        toys.patch(
            TOY, "Toy", "a", "apps", {"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}}
        )
    assert error.value.status == 422
    toys.delete(TOY, "Toy", "a", "apps")  # deleting again changes nothing
    toys.patch(TOY, "Toy", "a", "apps", {"metadata": {"finalizers": None}})
    assert toys.get(TOY, "Toy", "a", "apps") is None
    versions = toys.history(TOY, "Toy", "a", "apps")
    assert versions[-1] is None
    assert len(versions) == 3  # created, marked for deletion, gone (releasing the last finalizer deletes)


def test_garbage_collection_follows_owner_references(toys: KubeApi) -> None:
    owner = toys.create(toy("owner"))
    other = toys.create(toy("other"))

    def owned_by(*owners: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"apiVersion": TOY, "kind": "Toy", "name": o["metadata"]["name"], "uid": o["metadata"]["uid"]}
            for o in owners
        ]

    child = toys.create(configmap("child", ownerReferences=owned_by(owner)))
    toys.create(
        configmap(
            "grandchild",
            ownerReferences=[
                {
                    **owned_by(owner)[0],
                    "kind": "ConfigMap",
                    "name": "child",
                    "apiVersion": "v1",
                    "uid": child["metadata"]["uid"],
                }
            ],
        )
    )
    toys.create(configmap("shared", ownerReferences=owned_by(owner, other)))
    toys.create(configmap("held", ownerReferences=owned_by(owner), finalizers=["example.com/hold"]))
    toys.create(configmap("unrelated"))
    toys.delete(TOY, "Toy", "owner", "apps")
    remaining = {cm["metadata"]["name"]: cm for cm in toys.list("v1", "ConfigMap", "apps")}
    assert set(remaining) == {"shared", "held", "unrelated"}
    assert [ref["name"] for ref in remaining["shared"]["metadata"]["ownerReferences"]] == ["other"]
    assert remaining["held"]["metadata"]["deletionTimestamp"]


def test_orphan_propagation_keeps_dependents(toys: KubeApi) -> None:
    owner = toys.create(toy("owner"))
    reference = {"apiVersion": TOY, "kind": "Toy", "name": "owner", "uid": owner["metadata"]["uid"]}
    toys.create(configmap("child", ownerReferences=[reference]))
    toys.request("DELETE", f"{TOYS}/owner", {"propagationPolicy": "Orphan"})
    child = toys.get("v1", "ConfigMap", "child", "apps")
    assert child is not None
    assert "ownerReferences" not in child["metadata"]


def test_delete_collection_with_a_selector(kube_api: KubeApi) -> None:
    kube_api.create(configmap("a", labels={"app": "x"}))
    kube_api.create(configmap("b", labels={"app": "x"}))
    kube_api.create(configmap("c"))
    kube_api.request("DELETE", f"{CONFIGMAPS}?labelSelector=app%3Dx")
    assert [cm["metadata"]["name"] for cm in kube_api.list("v1", "ConfigMap", "apps")] == ["c"]


def test_delete_preconditions(kube_api: KubeApi) -> None:
    kube_api.create(configmap("a"))
    with pytest.raises(KubeApiError) as error:
        kube_api.request("DELETE", f"{CONFIGMAPS}/a", {"preconditions": {"uid": "not-the-uid"}})
    assert error.value.status == 409
    kube_api.delete("v1", "ConfigMap", "a", "apps")
    with pytest.raises(KubeApiError) as error:
        kube_api.delete("v1", "ConfigMap", "a", "apps")
    assert error.value.status == 404


# --- watching ---


@pytest.fixture()
def watch(kube_api: KubeApi) -> Iterator[Any]:
    connections: list[http.client.HTTPConnection] = []

    def open_watch(path: str, **params: str) -> http.client.HTTPResponse:
        connection = http.client.HTTPConnection(urllib.parse.urlsplit(kube_api.url).netloc, timeout=10)
        connections.append(connection)
        connection.request("GET", f"{path}?{urllib.parse.urlencode({'watch': 'true', **params})}")
        response = connection.getresponse()
        assert response.status == 200
        return response

    yield open_watch
    for connection in connections:
        connection.close()


def read_events(response: http.client.HTTPResponse, count: int | None = None) -> list[tuple[str, str]]:
    """(type, name) of the next `count` events, or of all events until the stream ends."""
    events: list[tuple[str, str]] = []
    while count is None or len(events) < count:
        line = response.readline()
        if not line:
            break
        event = json.loads(line)
        events.append((event["type"], event["object"]["metadata"].get("name", "")))
    return events


def test_watch_streams_changes_as_they_happen(kube_api: KubeApi, watch: Any) -> None:
    kube_api.create(configmap("existing"))
    stream = watch(CONFIGMAPS)
    assert read_events(stream, 1) == [("ADDED", "existing")]
    kube_api.create(configmap("a"))
    kube_api.patch("v1", "ConfigMap", "a", "apps", {"data": {"k": "v"}})
    kube_api.delete("v1", "ConfigMap", "a", "apps")
    kube_api.create(configmap("elsewhere", namespace="other"))
    kube_api.create(configmap("b"))
    assert read_events(stream, 4) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a"), ("ADDED", "b")]


def test_watch_resumes_from_a_resource_version_and_times_out(kube_api: KubeApi, watch: Any) -> None:
    first = kube_api.create(configmap("a"))
    kube_api.patch("v1", "ConfigMap", "a", "apps", {"data": {"k": "v"}})
    kube_api.create(configmap("b"))
    stream = watch(
        "/api/v1/configmaps", resourceVersion=first["metadata"]["resourceVersion"], timeoutSeconds="1"
    )
    assert read_events(stream) == [("MODIFIED", "a"), ("ADDED", "b")]  # then the stream ends


def test_watch_with_a_selector_sees_objects_enter_and_leave(kube_api: KubeApi, watch: Any) -> None:
    start = kube_api.create(configmap("a"))["metadata"]["resourceVersion"]
    kube_api.patch("v1", "ConfigMap", "a", "apps", {"metadata": {"labels": {"app": "web"}}})
    kube_api.patch("v1", "ConfigMap", "a", "apps", {"data": {"k": "v"}})
    kube_api.patch("v1", "ConfigMap", "a", "apps", {"metadata": {"labels": None}})
    stream = watch(CONFIGMAPS, resourceVersion=start, labelSelector="app=web", timeoutSeconds="1")
    assert read_events(stream) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_watch_from_a_compacted_version_is_410_gone(tmp_path: pathlib.Path) -> None:
    with serve_kube_api(tmp_path, watch_history_limit=2) as kube:
        start = kube.create(configmap("a"))["metadata"]["resourceVersion"]
        for name in "bcd":
            kube.create(configmap(name))
        query = urllib.parse.urlencode({"watch": "true", "resourceVersion": start})
        connection = http.client.HTTPConnection(urllib.parse.urlsplit(kube.url).netloc, timeout=10)
        connection.request("GET", f"{CONFIGMAPS}?{query}")
        event = json.loads(connection.getresponse().readline())
        connection.close()
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410


# --- clients, counting and faults ---


def test_the_kubernetes_client_finds_the_emulator_through_kubeconfig(kube_api: KubeApi) -> None:
    import kubernetes

    kubernetes.config.load_kube_config()  # type: ignore[no-untyped-call]  # from the default location
    api = kubernetes.client.CoreV1Api()
    body = kubernetes.client.V1ConfigMap.from_dict({"metadata": {"name": "from-client"}, "data": {"k": "v"}})
    assert body is not None
    created = api.create_namespaced_config_map("apps", body)  # answered 201: the client returns the object
    assert created.metadata is not None
    assert created.metadata.uid
    assert "apps" in [ns.metadata.name for ns in api.list_namespace().items if ns.metadata]
    assert kube_api.requests_by_agent["OpenAPI-Generator"] >= 2


def test_requests_are_counted(kube_api: KubeApi) -> None:
    before, by_method = kube_api.request_count, kube_api.requests_by_method
    kube_api.request("GET", "/api/v1/namespaces")
    kube_api.request("GET", "/api/v1/namespaces/default")
    kube_api.request("POST", CONFIGMAPS, configmap("a"))
    assert kube_api.request_count == before + 3
    after = kube_api.requests_by_method
    assert after["GET"] == by_method.get("GET", 0) + 2
    assert after["POST"] == by_method.get("POST", 0) + 1
    assert kube_api.requests_by_agent["kubeapi-tests"] == kube_api.request_count


def test_faults_can_be_injected_with_kmock_reactions(kube_api: KubeApi) -> None:
    kube_api.emulator[kmock.resource("", "v1", "configmaps")][kmock.method.POST] << 503
    status, _ = http_call(kube_api, "POST", CONFIGMAPS, configmap("a"))
    assert status == 503
    assert kube_api.get("v1", "ConfigMap", "a", "apps") is None
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "apps"}}
    assert kube_api.create(secret)["metadata"]["uid"]  # the rest still works


def test_failures_of_the_emulator_itself_are_500_and_recorded(tmp_path: pathlib.Path) -> None:
    with serve_kube_api(tmp_path) as kube:
        kube.emulator[kmock.method.GET]["/version"] << ZeroDivisionError("a bug in the emulator")
        status, body = http_call(kube, "GET", "/version")
        assert (status, body["reason"]) == (500, "InternalError")
        assert [type(e) for e in kube.server_errors] == [ZeroDivisionError]
