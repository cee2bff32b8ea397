"""
`KubeApi`: the tests' helpers over a real API server (`jmsbridge.control_plane.ControlPlane`), as the
cluster's admin: arrange objects, read them back, wait for conditions.

One control plane serves every test of a pytest worker; `reset()` puts it back as a test found it (every
collection written to since the last reset, as the audit log tells, emptied, the finalizers of objects
whose operator is gone taken off first, and the cluster-wide objects a test made deleted), so that each
test sees an empty cluster with our CRDs and the spark-operator's installed. Namespaces stay, empty, from
one test to the next.
"""

from __future__ import annotations

import dataclasses
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
WRITES = frozenset({"create", "update", "patch"})  # the verbs that can make an object
READS = frozenset({"get", "list", "watch"})
SERVER_USER = "system:apiserver"
# What a test may leave in `default` besides what the cluster keeps there itself.
DEFAULT_KEPT = {
    "serviceaccounts": {"default"},
    "configmaps": {"kube-root-ca.crt"},
    "services": {"kubernetes"},
}

KubeApiError = ApiError


def yaml_documents(text: str) -> list[Any]:
    """The documents of a YAML stream, with libyaml's parser when PyYAML has it (ten times quicker than
    the pure-Python one: the spark-operator CRD is 800 kB of YAML, a chart with its CRDs 100 kB)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [doc for doc in yaml.load_all(text, Loader=loader) if doc]


@functools.lru_cache(maxsize=16)
def _load_yaml_documents(path: pathlib.Path, mtime_ns: int) -> tuple[Any, ...]:
    return tuple(yaml_documents(path.read_text(encoding="utf-8")))


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
        self._reset_read = self._audit_read  # where the events the last `reset` read end
        # The files `install_crds` last installed (path, mtime), and where the events it last read end.
        self._crds_installed: tuple[tuple[pathlib.Path, int], ...] = ()
        self._crds_read = self._audit_read
        self._audit: list[dict[str, Any]] = []

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
        replaced), and wait until the server serves each of them. Nothing is asked when the same files
        were installed last and the audit log shows no CRD written or deleted since: the operator tests
        install ours for every test, which cost ten requests and 0.15 to 0.5 s each time."""
        installed = tuple((path, path.stat().st_mtime_ns) for path in paths)
        events, self._crds_read = self.control_plane.audit_events(self._crds_read)
        if installed == self._crds_installed and not any(map(_changes_crds, events)):
            return
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
        self._crds_installed = installed
        self._crds_read = self.control_plane.audit_offset()

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
        """Delete what was made since the last reset, and return when it is gone: every object of each
        namespaced collection something was written to (the finalizers of objects whose operator is gone
        taken off first; what the cluster keeps in `default`, and a namespace's own `default`
        ServiceAccount, stay), the labels and annotations of namespaces written to, and the cluster-wide
        objects that were not there at the start. The namespaces themselves stay, emptied: the namespace
        controller takes 5 s to delete one, a test's worth of objects go in a few hundred milliseconds.

        What was written comes from the audit log, which the server writes before it answers, whoever
        wrote (a test, an operator, the controller manager): listing every kind in every namespace instead
        cost 300 requests a reset once a worker's tests had made a few namespaces."""
        events, self._reset_read = self.control_plane.audit_events(self._reset_read)
        written = _writes(events)
        remaining = [path for path in map(self._empty, sorted(written.collections)) if path]
        for name in sorted(written.namespaces - SYSTEM_NAMESPACES):
            self._unlabel(name)
        for api_version, plural in CLUSTER_KINDS:
            if (api_version, plural) not in written.cluster_kinds:
                continue
            for name in self._names(api_version, plural) - self._baseline[plural]:
                if plural == "customresourcedefinitions" and name.endswith(KEPT_CRD_GROUPS):
                    continue
                self._delete(f"/apis/{api_version}/{plural}/{name}")
            if plural == "customresourcedefinitions":
                self._kinds.clear()  # the kinds served may have changed
        self.wait_for(
            lambda: not [path for path in remaining if self._left(path)],
            timeout=60,
            what=f"the tests' objects deleted: {remaining}",
        )

    def _empty(self, collection: str) -> str | None:
        """Take the finalizers off the objects of a namespaced collection and delete them all but what it
        keeps; what to list to see them gone, None if there was nothing to delete."""
        namespace, plural = collection.split("/")[-2:]
        if namespace == "default":
            kept = DEFAULT_KEPT.get(plural, set())
        else:  # a namespace's own account, which the ServiceAccount controller would make again
            kept = {"default"} if plural == "serviceaccounts" else set()
        try:
            items = self.request("GET", collection)["items"]
        except KubeApiError as e:
            if e.status == 404:  # a kind whose CRD a test installed and deleted again
                return None
            raise
        for item in items:
            if item["metadata"].get("finalizers"):
                self._delete_finalizers(f"{collection}/{item['metadata']['name']}")
        if not {item["metadata"]["name"] for item in items} - kept:
            return None
        query = ",".join(f"metadata.name!={name}" for name in sorted(kept))
        collection += f"?fieldSelector={query}" if query else ""
        self.request("DELETE", collection)
        return collection

    def _delete_finalizers(self, path: str) -> None:
        try:
            self.request("PATCH", path, {"metadata": {"finalizers": None}}, content_type=MERGE_PATCH)
        except KubeApiError as e:
            if e.status != 404:
                raise

    def _unlabel(self, namespace: str) -> None:
        """Take off the labels and annotations a test put on a namespace."""
        ns = self.get("v1", "Namespace", namespace)
        if ns is None:
            return
        extra = {k: None for k in ns["metadata"].get("labels") or {} if k != "kubernetes.io/metadata.name"}
        if extra or ns["metadata"].get("annotations"):
            patch = {"metadata": {"labels": extra, "annotations": None}}
            self.request("PATCH", f"/api/v1/namespaces/{namespace}", patch, content_type=MERGE_PATCH)

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


@dataclasses.dataclass
class _Writes:
    """What an audit log's write requests (create, update, patch) touched."""

    collections: set[str] = dataclasses.field(default_factory=set)  # namespaced, as API paths
    namespaces: set[str] = dataclasses.field(default_factory=set)
    cluster_kinds: set[tuple[str, str]] = dataclasses.field(default_factory=set)  # (apiVersion, plural)


def _writes(events: Iterable[Mapping[str, Any]]) -> _Writes:
    """The collections, namespaces and cluster-wide kinds written to in these audit events, but in the
    system namespaces and by the API server itself (its `kubernetes` Service and endpoints: the cluster's)."""
    written = _Writes()
    for event in events:
        ref = event.get("objectRef") or {}
        if event["verb"] not in WRITES or "resource" not in ref or event["user"]["username"] == SERVER_USER:
            continue
        group, version, plural = ref.get("apiGroup"), ref.get("apiVersion", "v1"), ref["resource"]
        api_version = f"{group}/{version}" if group else version
        namespace = ref.get("namespace")
        if plural == "namespaces":
            written.namespaces.add(ref.get("name") or namespace or "")
        elif not namespace:
            written.cluster_kinds.add((api_version, plural))
        elif namespace == "default" or namespace not in SYSTEM_NAMESPACES:
            prefix = f"/apis/{api_version}" if group else f"/api/{version}"
            written.collections.add(f"{prefix}/namespaces/{namespace}/{plural}")
    return written


def _changes_crds(event: Mapping[str, Any]) -> bool:
    ref = event.get("objectRef") or {}
    return ref.get("resource") == "customresourcedefinitions" and event["verb"] not in READS


def _counted(event: Mapping[str, Any]) -> bool:
    if event["stage"] == "ResponseStarted":
        return True
    started_watch = event["verb"] == "watch" and (event.get("responseStatus") or {}).get("code") == 200
    return event["stage"] in ("ResponseComplete", "Panic") and not started_watch


def _name(obj: Any) -> Any:
    return (obj or {}).get("metadata", {}).get("name")
