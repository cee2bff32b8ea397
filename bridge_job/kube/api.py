"""The Kubernetes API as plain JSON dicts: the one HTTP path of the job's lease and the operator's writes.

kopf talks to the API for the operator's own needs (watching, finalizers, its annotations); the operator's
writes of child objects and statuses, its reads of Secrets, and the job's Lease (`kube/leadership.py`) go
through `Kube`, on the official `kubernetes` client's transport. A job process has one client
(`Kube.shared`), for its Lease and its health reports alike.

- Configuration: loaded when a client is first made, not at import: in a pod from its service account
  (in-cluster), elsewhere from `$KUBECONFIG` as it is *then* (the client computes its default path at
  import time, too early for tools and tests that set the variable later), else `~/.kube/config`.
  Without any, `NotConfigured`.
- Timeouts: every request has one, the caller's (the lease cuts each to the time it has left) or
  `DEFAULT_TIMEOUT`. A request is sent once: callers retry within their own deadlines (kopf retries a
  handler, the lease retries until its renewal deadline).
- Errors: any answer but success is an `ApiError` with the HTTP status (0 when there was no answer) and
  the API server's message. A missing object is `None` for `get` and `False` for `delete`.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Final, NamedTuple

JSON: Final = "application/json"
MERGE_PATCH: Final = "application/merge-patch+json"
# What we write is refused whole when a field is unknown to the server's schema (a SparkApplication setting
# an older spark-operator CRD does not have, say), instead of stored without it and a warning nobody reads.
STRICT: Final = {"fieldValidation": "Strict"}
DEFAULT_TIMEOUT: Final = (10.0, 60.0)  # connect, read (seconds)
SERVICE_ACCOUNT_TOKEN: Final = "/var/run/secrets/kubernetes.io/serviceaccount/token"

Timeout = float | tuple[float, float]


class Resource(NamedTuple):
    group: str  # "" for the core API
    version: str
    plural: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None, name: str | None = None, subresource: str | None = None) -> str:
        base = f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"
        parts = [base]
        if namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name:
            parts.append(name)
        if subresource:
            parts.append(subresource)
        return "/".join(parts)


CONFIG_MAPS: Final = Resource("", "v1", "configmaps")
SECRETS: Final = Resource("", "v1", "secrets")
LEASES: Final = Resource("coordination.k8s.io", "v1", "leases")


class NotConfigured(Exception):
    """No cluster to talk to: not in a pod, and no kubeconfig."""


class ApiError(Exception):
    """An API answer other than success; `status` is the HTTP status (0 when there was no answer)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}" if status else f"no answer ({reason}: {message})")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def conflict(self) -> bool:
        """Someone else changed the object since it was read (or created it first)."""
        return self.status == 409

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def permanent(self) -> bool:
        """Retrying cannot help: not authenticated or not allowed (RBAC)."""
        return self.status in (401, 403)


def load_configuration() -> Any:
    """A `kubernetes.client.Configuration`: in-cluster when run in a pod, else from the kubeconfig."""
    from kubernetes import client, config

    configuration = client.Configuration()
    try:
        if os.environ.get("KUBERNETES_SERVICE_HOST") and os.path.exists(SERVICE_ACCOUNT_TOKEN):
            load_incluster: Any = config.load_incluster_config
            load_incluster(client_configuration=configuration)
        else:
            path = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
            load_kubeconfig: Any = config.load_kube_config
            load_kubeconfig(config_file=path, client_configuration=configuration)
    except (config.ConfigException, OSError) as error:
        raise NotConfigured(str(error)) from None
    configuration.retries = 0  # the caller retries, within its own deadline
    configuration.connection_pool_maxsize = 32  # the operator's handler threads share one pool
    return configuration


class Kube:
    """A thread-safe client (one connection pool) over `kubernetes.client.ApiClient`."""

    def __init__(self, api_client: Any) -> None:
        self._api = api_client

    @classmethod
    def connect(cls) -> Kube:
        """A client for the cluster configured now (see the module docstring); `NotConfigured` if none."""
        from kubernetes import client

        return cls(client.ApiClient(load_configuration()))

    @classmethod
    def shared(cls) -> Kube:
        """This process's client for the cluster configured now, made once: the job's Lease and its health
        reports share one connection pool. `NotConfigured` if no cluster is."""
        from kubernetes import client

        configuration = load_configuration()
        cluster = (configuration.host, configuration.cert_file, configuration.key_file)
        key = (*cluster, configuration.ssl_ca_cert, repr(configuration.api_key))
        with _shared_lock:
            kube = _shared.get(key)
            if kube is None:
                kube = _shared[key] = cls(client.ApiClient(configuration))
        return kube

    def close(self) -> None:
        self._api.close()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, str] | None = None,
        content_type: str = JSON,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> Any:
        """One request; the decoded JSON answer (None when empty), or `ApiError`."""
        with _answerless():
            response = self._send(method, path, body, query, content_type, timeout)
            data = response.read()
        if not 200 <= response.status <= 299:
            raise _api_error(response.status, str(response.reason or ""), data)
        return json.loads(data) if data else None

    def watch(
        self, resource: Resource, namespace: str | None, name: str, seconds: int
    ) -> Iterator[dict[str, Any]]:
        """The changes to one object as the API server sends them (`{"type": ..., "object": ...}`), for
        `seconds` at most; `ApiError` when the watch is refused or breaks off."""
        query = {"watch": "true", "fieldSelector": f"metadata.name={name}", "timeoutSeconds": str(seconds)}
        # Reads wait for the next change, which may be the server's closing of the watch after `seconds`.
        timeout = (DEFAULT_TIMEOUT[0], seconds + DEFAULT_TIMEOUT[0])
        with _answerless():
            response = self._send("GET", resource.path(namespace), None, query, JSON, timeout)
        stream = response.response  # urllib3's, not read ahead: the events come one line each
        try:
            if not 200 <= response.status <= 299:
                raise _api_error(response.status, str(response.reason or ""), stream.read())
            with _answerless():
                for line in stream:
                    if line.strip():
                        yield json.loads(line)
        finally:  # a watch left before its end has unread events: its connection is not reused
            stream.close()
            stream.release_conn()

    def _send(
        self,
        method: str,
        path: str,
        body: Any,
        query: Mapping[str, str] | None,
        content_type: str,
        timeout: Timeout,
    ) -> Any:
        method, url, headers, payload, form = self._api.param_serialize(
            method=method,
            resource_path=path,
            query_params=list(query.items()) if query else None,
            header_params={"Accept": JSON, "Content-Type": content_type},
            body=body,
            auth_settings=["BearerToken"],
        )
        return self._api.call_api(
            method, url, header_params=headers, body=payload, post_params=form, _request_timeout=timeout
        )

    # -----------------------------------------------------------------------------------------------

    def get(
        self, resource: Resource, namespace: str | None, name: str, *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = self.request("GET", resource.path(namespace, name), timeout=timeout)
        except ApiError as error:
            if error.not_found:
                return None
            raise
        return result

    def list(
        self, resource: Resource, namespace: str | None, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        query = {"labelSelector": label_selector} if label_selector else None
        result = self.request("GET", resource.path(namespace), query=query)
        items: list[dict[str, Any]] = (result or {}).get("items") or []
        return items

    def create(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.request("POST", resource.path(namespace), dict(body), query=STRICT)
        return result

    def replace(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> dict[str, Any]:
        """PUT: the whole object; `metadata.resourceVersion` makes it fail (409) when someone was faster."""
        name = str(body["metadata"]["name"])
        result: dict[str, Any] = self.request("PUT", resource.path(namespace, name), dict(body), query=STRICT)
        return result

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: Mapping[str, Any],
        subresource: str | None = None,
    ) -> dict[str, Any]:
        path = resource.path(namespace, name, subresource)
        result: dict[str, Any] = self.request(
            "PATCH", path, dict(patch), content_type=MERGE_PATCH, query=STRICT
        )
        return result

    def patch_status(
        self, resource: Resource, namespace: str | None, name: str, status: Mapping[str, Any]
    ) -> dict[str, Any]:
        return self.patch(resource, namespace, name, {"status": dict(status)}, subresource="status")

    def delete(self, resource: Resource, namespace: str | None, name: str) -> bool:
        """Delete (in the background: the API server's garbage collector takes the dependants)."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        try:
            self.request("DELETE", resource.path(namespace, name), body)
        except ApiError as error:
            if error.not_found:
                return False
            raise
        return True


_shared: dict[tuple[object, ...], Kube] = {}  # per cluster and credentials, see `Kube.shared`
_shared_lock = threading.Lock()


@contextlib.contextmanager
def _answerless() -> Iterator[None]:
    """No answer (refused, timed out, TLS...) is an `ApiError` with status 0."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        yield
    except (ApiException, HTTPError, OSError) as error:
        raise ApiError(0, type(error).__name__, str(error)) from None


def _api_error(status: int, reason: str, data: bytes | None) -> ApiError:
    message = reason
    with contextlib.suppress(TypeError, ValueError, AttributeError):
        message = json.loads(data or b"").get("message") or reason
    return ApiError(status, reason, message)
