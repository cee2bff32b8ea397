"""
`KubeApi`: a running emulator and the synchronous helpers tests use to arrange and inspect it.

The helpers go through real HTTP, like any other client, so they exercise the emulator too. They
identify themselves as the `kubeapi-tests` client, so request counts can tell them apart from the
operator's (`requests_by_agent`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import pathlib
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import kmock
import yaml

from tests.kubeapi.emulator import KubeApiEmulator
from tests.kubeapi.serving import ServingThread

T = TypeVar("T")

TEST_CLIENT = "kubeapi-tests"
MERGE_PATCH = "application/merge-patch+json"


class KubeApiError(Exception):
    """A request to the emulator failed; `status` and `reason` are those of the `Status` body."""

    def __init__(self, method: str, path: str, status: int, body: Any) -> None:
        self.status = status
        self.body = body
        self.reason = body.get("reason", "") if isinstance(body, dict) else ""
        message = body.get("message", body) if isinstance(body, dict) else body
        super().__init__(f"{method} {path} -> {status} {self.reason}: {message}")


@functools.lru_cache(maxsize=16)
def _load_yaml_documents(path: pathlib.Path, mtime_ns: int) -> tuple[Any, ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the spark-operator CRD is 800 kB of YAML
    with path.open(encoding="utf-8") as f:
        return tuple(doc for doc in yaml.load_all(f, Loader=loader) if doc)


class KubeApi:
    """
    A running emulator: its `url`, a `kubeconfig` for it, request counts, and helpers for tests.

    Kinds are addressed as in manifests, by `apiVersion` and `kind`; a namespace of None means
    `default` for a namespaced kind, except in `list`, where it means all namespaces.
    """

    def __init__(self, serving: ServingThread, kubeconfig: pathlib.Path) -> None:
        self._serving = serving
        self.url = serving.url
        self.kubeconfig = kubeconfig
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
        self._kinds: dict[str, dict[str, dict[str, Any]]] = {}  # api_version -> kind -> discovery entry

    # --- counting and introspection ---

    @property
    def request_count(self) -> int:
        """Total HTTP requests served so far (all clients, including these helpers)."""
        return sum(self._serving.emulator.counts().values())

    @property
    def requests_by_method(self) -> dict[str, int]:
        return self._requests_by(0)

    @property
    def requests_by_agent(self) -> dict[str, int]:
        """By `User-Agent` product: `kopf`, `OpenAPI-Generator` (the kubernetes client), `kubeapi-tests`..."""
        return self._requests_by(1)

    def _requests_by(self, part: int) -> dict[str, int]:
        """Request counts summed by one part of the emulator's (method, agent) keys."""
        result: dict[str, int] = {}
        for key, count in self._serving.emulator.counts().items():
            result[key[part]] = result.get(key[part], 0) + count
        return result

    def requests_by_resource(self, *agents: str) -> dict[str, int]:
        """Requests of these clients (all without any) by `verb resource`, e.g. `patch jmsbridges/status`."""
        result: dict[str, int] = {}
        for (agent, verb, resource), count in self._serving.emulator.counts_by_resource().items():
            if not agents or agent in agents:
                result[f"{verb} {resource}"] = result.get(f"{verb} {resource}", 0) + count
        return dict(sorted(result.items()))

    def requests_to(self, method: str, plural: str, name: str | None = None) -> int:
        """Requests served so far with `method` (`POST`...) on a resource, or on one object of it."""
        return self._serving.emulator.served(method, plural, name)

    @property
    def server_errors(self) -> list[BaseException]:
        """Unexpected failures inside the emulator (answered with 500); the fixture fails tests on them."""
        return list(self._serving.emulator.failures)

    @property
    def emulator(self) -> KubeApiEmulator:
        """The kmock-based emulator itself, e.g. for fault injection with kmock's reaction DSL."""
        return self._serving.emulator

    @contextlib.contextmanager
    def without_validation_rules(self) -> Iterator[None]:
        """Store what the CRDs' CEL rules refuse, as an API server older than 1.25 does (or one whose CRD
        got the rule after the object was stored): for tests of what the operator itself refuses."""
        state = self._serving.emulator.state
        self._serving.call(lambda: setattr(state, "validation_rules", False))
        try:
            yield
        finally:
            self._serving.call(lambda: setattr(state, "validation_rules", True))

    def history(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> list[dict[str, Any] | None]:
        """Every stored version of an object, oldest first; `None` marks a deletion."""
        entry = self._discover(api_version, kind)
        emulator = self._serving.emulator
        group, _, version = api_version.rpartition("/")
        key = kmock.resource(group, version, entry["name"])
        namespace = self._namespace(entry, namespace)

        def read() -> list[dict[str, Any] | None]:  # in the emulator's loop: its state is not thread-safe
            rtype = emulator.catalog.get(key)
            return [] if rtype is None else emulator.state.history(rtype, namespace, name)

        return self._serving.call(read)

    # --- the API ---

    def install_crds(self, *paths: pathlib.Path) -> None:
        """POST every CustomResourceDefinition found in the YAML files (a CRD that exists is replaced)."""
        collection = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        for path in paths:
            for doc in _load_yaml_documents(path, path.stat().st_mtime_ns):
                if doc.get("kind") != "CustomResourceDefinition":
                    continue
                try:
                    self.request("POST", collection, doc)
                except KubeApiError as e:
                    if e.status != 409:
                        raise
                    name = doc["metadata"]["name"]
                    current = self.request("GET", f"{collection}/{name}")
                    metadata = {**doc["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}
                    self.request("PUT", f"{collection}/{name}", {**doc, "metadata": metadata})
        self._kinds.clear()

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        entry = self._discover(obj["apiVersion"], obj["kind"])
        namespace = self._namespace(entry, obj.get("metadata", {}).get("namespace"))
        result: dict[str, Any] = self.request("POST", self._path(obj["apiVersion"], entry, namespace), obj)
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

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> Any:
        """A raw request; returns the decoded JSON body or raises KubeApiError."""
        data = None if body is None else json.dumps(body).encode()
        headers = {
            "Content-Type": content_type,
            "Accept": "application/json",
            "User-Agent": f"{TEST_CLIENT}/1",
            **(headers or {}),
        }
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with self._opener.open(request, timeout=60) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                error_body = json.loads(raw)
            except ValueError:
                error_body = raw.decode(errors="replace")
            raise KubeApiError(method, path, e.code, error_body) from None

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
            raise LookupError(f"the emulator serves no kind {kind} in {api_version}") from None

    @staticmethod
    def _namespace(entry: dict[str, Any], namespace: str | None) -> str | None:
        return (namespace or "default") if entry["namespaced"] else None

    def _path(
        self,
        api_version: str,
        entry: dict[str, Any],
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


def write_kubeconfig(path: pathlib.Path, url: str) -> pathlib.Path:
    """A kubeconfig with one context pointing at `url`, without authentication."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubeapi-emulator", "cluster": {"server": url}}],
        "users": [{"name": "kubeapi-emulator", "user": {}}],
        "contexts": [
            {
                "name": "kubeapi-emulator",
                "context": {
                    "cluster": "kubeapi-emulator",
                    "user": "kubeapi-emulator",
                    "namespace": "default",
                },
            }
        ],
        "current-context": "kubeapi-emulator",
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@contextlib.contextmanager
def serve_kube_api(directory: pathlib.Path, **emulator_options: Any) -> Iterator[KubeApi]:
    """Run a fresh emulator on a free loopback port; its kubeconfig is written into `directory`."""
    serving = ServingThread(**emulator_options)
    serving.start()
    try:
        yield KubeApi(serving, write_kubeconfig(directory / "kubeconfig", serving.url))
    finally:
        serving.stop()
