"""
`KubeApi`: the tests' helpers over a real API server (`jmsbridge.control_plane.ControlPlane`), as the
cluster's admin: arrange objects, read them back, wait for conditions.

One control plane serves every test of a pytest worker; `reset()` puts it back as a test found it (every
object in the namespaces emptied, the finalizers of objects whose operator is gone taken off first, and
the cluster-wide objects a test made deleted), so that each test sees an empty cluster with our CRDs and
the spark-operator's installed. Namespaces stay, empty, from one test to the next.
"""

from __future__ import annotations

import builtins
import functools
import pathlib
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import yaml

from jmsbridge.control_plane import ApiError, ControlPlane

T = TypeVar("T")

MERGE_PATCH = "application/merge-patch+json"
CRDS = "apiextensions.k8s.io/v1/customresourcedefinitions"
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
# Cluster-wide kinds a test may make (a chart's RBAC, a CRD): deleted again unless they were there.
CLUSTER_KINDS = (
    ("rbac.authorization.k8s.io/v1", "clusterroles"),
    ("rbac.authorization.k8s.io/v1", "clusterrolebindings"),
    ("apiextensions.k8s.io/v1", "customresourcedefinitions"),
)
# CRDs kept from one test to the next (installing the spark-operator's costs the server a second):
# `install_crds` replaces them when their files change.
KEPT_CRD_GROUPS = ("jmsbridge.dev", "sparkoperator.k8s.io")
# What a test may leave in `default` besides what the cluster keeps there itself.
DEFAULT_KEPT = {
    "serviceaccounts": {"default"},
    "configmaps": {"kube-root-ca.crt"},
    "services": {"kubernetes"},
}

KubeApiError = ApiError


@functools.lru_cache(maxsize=16)
def _load_yaml_documents(path: pathlib.Path, mtime_ns: int) -> tuple[Any, ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the spark-operator CRD is 800 kB of YAML
    with path.open(encoding="utf-8") as f:
        return tuple(doc for doc in yaml.load_all(f, Loader=loader) if doc)


class KubeApi:
    """A real API server: its `url`, an admin `kubeconfig`, and helpers for tests.

    Kinds are addressed as in manifests, by `apiVersion` and `kind`; a namespace of None means
    `default` for a namespaced kind, except in `list`, where it means all namespaces.
    """

    def __init__(self, control_plane: ControlPlane) -> None:
        self.control_plane = control_plane
        self.url = control_plane.url
        self.kubeconfig = control_plane.kubeconfig
        self._kinds: dict[str, dict[str, dict[str, Any]]] = {}  # api_version -> kind -> discovery entry
        self._baseline = {plural: self._names(api_version, plural) for api_version, plural in CLUSTER_KINDS}
        self._audit_read = control_plane.audit_offset()  # where the events read so far end
        self._audit: list[dict[str, Any]] = []
        self._namespaced: tuple[frozenset[str], builtins.list[tuple[str, str]]] | None = None

    # --- what was asked: the API server's audit log since the test began ---

    def begin(self) -> None:
        """A test begins: counts and histories start here."""
        self._audit_read = self.control_plane.audit_offset()
        self._audit = []

    def audit_events(self) -> list[dict[str, Any]]:
        """One audit event per request since the test began: when it was answered, or for a watch that the
        server took, when it started (a watch is answered only when it ends, minutes later)."""
        events, self._audit_read = self.control_plane.audit_events(self._audit_read)
        self._audit.extend(e for e in events if _counted(e))
        return self._audit

    @property
    def requests_by_agent(self) -> dict[str, int]:
        """Requests since the test began by `User-Agent` product: `kopf`, `OpenAPI-Generator`..."""
        result: dict[str, int] = {}
        for event in self.audit_events():
            agent = event.get("userAgent", "").split("/", 1)[0]
            result[agent] = result.get(agent, 0) + 1
        return result

    def requests_by_resource(self, *agents: str) -> dict[str, int]:
        """Requests of these clients (by User-Agent product: `kopf`, `OpenAPI-Generator`; all without any)
        since the test began, by `verb resource`, e.g. `patch jmsbridges/status`."""
        result: dict[str, int] = {}
        for event in self.audit_events():
            agent = event.get("userAgent", "").split("/", 1)[0]
            ref = event.get("objectRef") or {}
            if (agents and agent not in agents) or "resource" not in ref:
                continue
            resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
            key = f"{event['verb']} {resource}"
            result[key] = result.get(key, 0) + 1
        return dict(sorted(result.items()))

    def requests_to(self, method: str, plural: str, name: str | None = None) -> int:
        """Requests answered since the test began with `method` (`POST`...) on a resource, or one object."""
        verbs = {"GET": ("get", "list", "watch"), "POST": ("create",), "PUT": ("update",),
                 "PATCH": ("patch",), "DELETE": ("delete", "deletecollection")}[method]  # fmt: skip
        return sum(
            1
            for event in self.audit_events()
            if event["verb"] in verbs
            and (event.get("objectRef") or {}).get("resource") == plural
            and (name is None or event["objectRef"].get("name") == name)
        )

    def refused(self, user: str) -> list[str]:
        """The requests of `user` the server refused as forbidden (403) since the test began."""
        return [
            f"{e['verb']} {e.get('requestURI')}: {(e.get('responseStatus') or {}).get('reason', '')}"
            for e in self.audit_events()
            if e["user"].get("username") == user and (e.get("responseStatus") or {}).get("code") == 403
        ]

    def history(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> list[dict[str, Any] | None]:
        """Every version of an object stored since the test began, oldest first; `None` marks a deletion.
        (Bridges, routes, SparkApplications and Leases: the kinds the audit policy records whole.)"""
        entry = self._discover(api_version, kind)
        group = api_version.rpartition("/")[0]
        namespace = self._namespace(entry, namespace)
        versions: list[dict[str, Any] | None] = []
        for event in self.audit_events():
            ref = event.get("objectRef") or {}
            answered = (event.get("responseStatus") or {}).get("code", 500)
            if (
                ref.get("apiGroup", "") == group
                and ref.get("resource") == entry["name"]
                and ref.get("namespace") == namespace
                and (ref.get("name") or (event.get("responseObject") or {}).get("metadata", {}).get("name"))
                == name
                and event["verb"] in ("create", "update", "patch", "delete")
                and answered < 300
            ):
                versions.append(None if event["verb"] == "delete" else event.get("responseObject"))
        return versions

    # --- the API ---

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        token: str | None = None,
    ) -> Any:
        """A raw request as the admin (or as `token`); the decoded JSON body, or KubeApiError."""
        return self.control_plane.request(method, path, body, content_type=content_type, token=token)

    def apply_manifests(self, documents: Iterable[Mapping[str, Any]]) -> None:
        """Create each object (replace it where it exists), as `kubectl apply` would end up."""
        for doc in documents:
            try:
                self.create(dict(doc))
            except KubeApiError as e:
                if e.status != 409:
                    raise
                self.replace(dict(doc))

    def install_crds(self, *paths: pathlib.Path) -> None:
        """Create every CustomResourceDefinition found in the YAML or JSON files (one that exists is
        replaced), and wait until the server serves each of them."""
        crds = [
            doc
            for path in paths
            for doc in _load_yaml_documents(path, path.stat().st_mtime_ns)
            if doc.get("kind") == "CustomResourceDefinition"
        ]
        for crd in crds:
            name = crd["metadata"]["name"]
            current = self.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
            if current is None:
                self.create(crd)
            elif not crd["spec"].items() <= current["spec"].items():  # the server adds defaults beside ours
                self.replace(crd)
        for crd in crds:
            crd_name: str = crd["metadata"]["name"]
            established = functools.partial(self._established, crd_name)
            self.wait_for(established, what=f"CRD {crd_name} established")
        self._kinds.clear()
        self.wait_listed(crds)

    def wait_listed(self, crds: Iterable[Mapping[str, Any]]) -> None:
        """Wait until the server lists each CRD's objects: after a CRD is created or replaced, its watch
        cache starts again, and until it is ready a list or watch is refused (429, "storage is
        (re)initializing"), which a client such as kopf waits out with growing pauses."""
        for crd in crds:
            group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
            for version in (v["name"] for v in crd["spec"]["versions"] if v.get("served", True)):
                path = f"/apis/{group}/{version}/{plural}?limit=1"
                self.wait_for(functools.partial(self._listed, path), what=f"{path} listed")

    def _listed(self, path: str) -> bool:
        try:
            self.request("GET", path)
        except KubeApiError as error:
            if error.status != 429:
                raise
            return False
        return True

    def _established(self, name: str) -> bool:
        current = self.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
        conditions = (current or {}).get("status", {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    def create(self, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        entry = self._discover(obj["apiVersion"], obj["kind"])
        namespace = self._namespace(entry, obj.get("metadata", {}).get("namespace"))
        path = self._path(obj["apiVersion"], entry, namespace)
        query = "?fieldValidation=Strict" + ("&dryRun=All" if dry_run else "")
        result: dict[str, Any] = self.request("POST", path + query, obj)
        return result

    def ensure_namespace(self, name: str) -> None:
        """The namespace, made if it is not there (namespaces outlive the test that made them: `reset`)."""
        if self.get("v1", "Namespace", name) is None:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def replace(self, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """PUT `obj` over the stored object of its name (taking its resourceVersion)."""
        entry = self._discover(obj["apiVersion"], obj["kind"])
        metadata = obj["metadata"]
        namespace = self._namespace(entry, metadata.get("namespace"))
        path = self._path(obj["apiVersion"], entry, namespace, metadata["name"])
        current = self.request("GET", path)
        body = {**obj, "metadata": {**metadata, "resourceVersion": current["metadata"]["resourceVersion"]}}
        query = "?fieldValidation=Strict" + ("&dryRun=All" if dry_run else "")
        result: dict[str, Any] = self.request("PUT", path + query, body)
        return result

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        """The object, or None if it does not exist."""
        entry = self._discover(api_version, kind)
        try:
            result: dict[str, Any] = self.request("GET", self._path(api_version, entry, namespace, name))
        except KubeApiError as e:
            if e.status == 404:
                return None
            raise
        return result

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        """Objects in one namespace, or in all namespaces when `namespace` is None."""
        entry = self._discover(api_version, kind)
        path = self._path(api_version, entry, namespace if entry["namespaced"] else None, listing=True)
        if label_selector:
            path += "?" + urllib.parse.urlencode({"labelSelector": label_selector})
        items: list[dict[str, Any]] = self.request("GET", path)["items"]
        return items

    def patch(
        self, api_version: str, kind: str, name: str, namespace: str | None, patch: dict[str, Any]
    ) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386) of the main endpoint."""
        entry = self._discover(api_version, kind)
        path = self._path(api_version, entry, namespace, name)
        result: dict[str, Any] = self.request("PATCH", path, patch, content_type=MERGE_PATCH)
        return result

    def patch_status(
        self, api_version: str, kind: str, name: str, namespace: str | None, status: dict[str, Any]
    ) -> dict[str, Any]:
        """Merge-patch `status`, through the status subresource if the kind has one."""
        entry = self._discover(api_version, kind)
        subresource = "status" if entry["status"] else None
        path = self._path(api_version, entry, namespace, name, subresource)
        result: dict[str, Any] = self.request("PATCH", path, {"status": status}, content_type=MERGE_PATCH)
        return result

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        """Delete (or, with finalizers, mark for deletion); KubeApiError(404) if there is no such object."""
        entry = self._discover(api_version, kind)
        self.request("DELETE", self._path(api_version, entry, namespace, name))

    def wait_for(self, condition: Callable[[], T | bool | None], timeout: float = 30, what: str = "") -> T:
        """Poll `condition` until it returns something truthy and return that; AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        delay = 0.01
        while True:
            result = condition()
            if result:
                return result  # type: ignore[return-value]  # truthy, so not None or False
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"Timed out after {timeout}s waiting for {what or condition!r}; last: {result!r}"
                )
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.2)

    # --- between tests ---

    def reset(self) -> None:
        """Delete what tests made, and return when it is gone: every object in every namespace but the
        system ones and what the cluster keeps in `default` (the finalizers of objects whose operator is
        gone taken off first), the namespaces' labels, and the cluster-wide objects that were not there at
        the start. The namespaces themselves stay, emptied: the namespace controller takes 5 s to delete
        one, a test's worth of objects go in a few hundred milliseconds."""
        namespaces = [
            ns for ns in self.list("v1", "Namespace") if ns["metadata"]["name"] not in SYSTEM_NAMESPACES
        ]
        names = [ns["metadata"]["name"] for ns in namespaces]
        # One list of the CRDs (the spark-operator's alone is 800 kB) serves every step below.
        crds = self.request("GET", f"/apis/{CRDS}")["items"]
        crd_names = frozenset(crd["metadata"]["name"] for crd in crds)
        custom = _custom_kinds(crds)
        for namespace in [*names, "default"]:
            self._drop_finalizers(namespace, custom)
        kinds = self._namespaced_kinds(crd_names)
        remaining = [path for ns in [*names, "default"] for path in self._delete_everything(ns, kinds)]
        for ns in namespaces:
            extra = {
                k: None for k in ns["metadata"].get("labels") or {} if k != "kubernetes.io/metadata.name"
            }
            if extra or ns["metadata"].get("annotations"):
                patch = {"metadata": {"labels": extra, "annotations": None}}
                self.request(
                    "PATCH", f"/api/v1/namespaces/{ns['metadata']['name']}", patch, content_type=MERGE_PATCH
                )
        for api_version, plural in CLUSTER_KINDS:
            present = crd_names if f"{api_version}/{plural}" == CRDS else self._names(api_version, plural)
            for name in present - self._baseline[plural]:
                if plural == "customresourcedefinitions" and name.endswith(KEPT_CRD_GROUPS):
                    continue
                self._delete(f"/apis/{api_version}/{plural}/{name}")
        self.wait_for(
            lambda: not [path for path in remaining if self._left(path)],
            timeout=60,
            what=f"the tests' objects deleted: {remaining}",
        )
        self._kinds.clear()

    def _namespaced_kinds(self, crds: frozenset[str]) -> builtins.list[tuple[str, str]]:
        """(API path prefix, plural) of every namespaced kind that can be listed and deleted: discovered
        again only when the CRDs (`crds`, their names) changed (otherwise 25 discovery requests a test)."""
        if self._namespaced is None or self._namespaced[0] != crds:
            self._namespaced = (crds, self._discover_namespaced_kinds())
        return self._namespaced[1]

    def _discover_namespaced_kinds(self) -> builtins.list[tuple[str, str]]:
        groups = ["/api/v1"] + [
            f"/apis/{group['preferredVersion']['groupVersion']}"
            for group in self.request("GET", "/apis")["groups"]
        ]
        return [
            (prefix, resource["name"])
            for prefix in groups
            for resource in self.request("GET", prefix)["resources"]
            if resource["namespaced"]
            and "/" not in resource["name"]
            and {"list", "deletecollection"} <= set(resource.get("verbs", []))
        ]

    def _delete_everything(self, namespace: str, kinds: Iterable[tuple[str, str]]) -> builtins.list[str]:
        """Delete every object in `namespace` (but what the cluster keeps in `default`); the collections
        that had any, to wait on."""
        deleted = []
        for prefix, plural in kinds:
            collection = f"{prefix}/namespaces/{namespace}/{plural}"
            if namespace == "default":
                kept = DEFAULT_KEPT.get(plural, set())
            else:  # a namespace's own account, which the ServiceAccount controller would make again
                kept = {"default"} if plural == "serviceaccounts" else set()
            items = [i["metadata"]["name"] for i in self.request("GET", collection)["items"]]
            if not set(items) - kept:
                continue
            query = ",".join(f"metadata.name!={name}" for name in sorted(kept))
            collection += f"?fieldSelector={query}" if query else ""
            self.request("DELETE", collection)
            deleted.append(collection)
        return deleted

    def _left(self, collection: str) -> bool:
        return bool(self.request("GET", collection)["items"])

    def _delete(self, path: str) -> None:
        try:
            self.request("DELETE", path)
        except KubeApiError as e:
            if e.status != 404:
                raise

    def _names(self, api_version: str, plural: str) -> set[str]:
        return {
            item["metadata"]["name"] for item in self.request("GET", f"/apis/{api_version}/{plural}")["items"]
        }

    def _drop_finalizers(self, namespace: str, custom: Iterable[tuple[str, str]]) -> None:
        for api_version, plural in custom:
            collection = f"/apis/{api_version}/namespaces/{namespace}/{plural}"
            for item in self.request("GET", collection)["items"]:
                if item["metadata"].get("finalizers"):
                    patch = {"metadata": {"finalizers": None}}
                    path = f"{collection}/{item['metadata']['name']}"
                    try:
                        self.request("PATCH", path, patch, content_type=MERGE_PATCH)
                    except KubeApiError as e:
                        if e.status != 404:
                            raise

    # --- kinds and paths ---

    def _discover(self, api_version: str, kind: str) -> dict[str, Any]:
        """The discovery entry of a kind (plural, namespaced, status), cached per API version."""
        if kind not in self._kinds.get(api_version, {}):
            prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            resources = self.request("GET", prefix)["resources"]
            names = {resource["name"] for resource in resources}
            self._kinds[api_version] = {
                resource["kind"]: {**resource, "status": f"{resource['name']}/status" in names}
                for resource in resources
                if "/" not in resource["name"]
            }
        try:
            return self._kinds[api_version][kind]
        except KeyError:
            raise LookupError(f"the API server serves no kind {kind} in {api_version}") from None

    @staticmethod
    def _namespace(entry: Mapping[str, Any], namespace: str | None) -> str | None:
        return (namespace or "default") if entry["namespaced"] else None

    def _path(
        self,
        api_version: str,
        entry: Mapping[str, Any],
        namespace: str | None,
        name: str | None = None,
        subresource: str | None = None,
        *,
        listing: bool = False,
    ) -> str:
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if not listing:
            namespace = self._namespace(entry, namespace)
        parts = [prefix]
        if namespace is not None:
            parts.append(f"namespaces/{namespace}")
        parts.append(entry["name"])
        parts.extend(part for part in (name, subresource) if part)
        return "/".join(parts)


def _custom_kinds(crds: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(apiVersion, plural) of every namespaced custom resource kind these CRDs serve."""
    return [
        (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["plural"])
        for crd in crds
        if crd["spec"]["scope"] == "Namespaced"
        for version in crd["spec"]["versions"]
        if version.get("storage")
    ]


def _counted(event: Mapping[str, Any]) -> bool:
    if event["stage"] == "ResponseStarted":
        return True
    started_watch = event["verb"] == "watch" and (event.get("responseStatus") or {}).get("code") == 200
    return event["stage"] in ("ResponseComplete", "Panic") and not started_watch


def _name(obj: Any) -> Any:
    return (obj or {}).get("metadata", {}).get("name")
