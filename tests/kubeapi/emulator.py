"""
A stateful Kubernetes API server for tests, built on kmock's `KubernetesScaffold`.

kmock 0.8 provides the HTTP side: request interpretation (resource, namespace, name, subresource),
the reaction DSL (a test can still inject faults, e.g. `emulator['patch', kmock.resource(...)] << 500`),
discovery rendered from a `ResourcesArray`, and `Status` error bodies. Its `KubernetesEmulator` keeps
objects too, but it changes them in `_handle()` before any reaction runs, with a shallow merge and no
uid, resourceVersion or generation; that cannot be turned off without bypassing it. So this class
extends the scaffold underneath it instead, keeps kmock's `ObjectsArray` (with per-object history) as
its `objects`, and serves every resource request from `cluster.ClusterState`, which implements the
semantics an operator relies on.

Beyond the scaffold, it also:
- parses `/api/v1/namespaces[/{name}]` (kmock's parser fails on the first and misreads the second);
- counts the requests it serves, per method and per client (the `User-Agent` product);
- serves `?watch=true` from the cluster's event log, resumable from any resourceVersion;
- records unexpected failures (500s), so that tests fail on emulator bugs instead of passing over them.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import threading
import traceback
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeVar

import aiohttp.web
import attrs
import kmock
import yaml

# Response is importable from kmock but not in its __all__; StreamingError is not re-exported at all.
from kmock._internal.rendering import Response, StreamingError

from tests.kubeapi import openapi, patching, selectors, tables
from tests.kubeapi.cluster import (
    ClusterState,
    WatchEvent,
    bad_request,
    decode_continue,
    encode_continue,
    not_found,
)
from tests.kubeapi.resources import VERBS, ResourceCatalog, ResourceType

logger = logging.getLogger(__name__)

_JSON = {"Content-Type": "application/json"}
N = TypeVar("N", int, float)


@attrs.frozen
class ApiPath:
    group: str
    version: str | None = None
    plural: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None


def parse_api_path(path: str) -> ApiPath | None:
    """`/api/v1/namespaces/ns/configmaps/x` -> ApiPath('', 'v1', 'configmaps', 'ns', 'x'); None elsewhere."""
    parts = [part for part in path.split("/") if part]
    if parts[:1] == ["api"]:
        group, rest = "", parts[1:]
    elif parts[:1] == ["apis"] and len(parts) >= 2:
        group, rest = parts[1], parts[2:]
    else:
        return None
    if not rest:
        return ApiPath(group)
    version, rest = rest[0], rest[1:]
    namespace = None
    # `namespaces/{ns}/{plural}/...` is a namespaced resource, unless it is the namespace's own subresource.
    if (
        len(rest) >= 3
        and rest[0] == "namespaces"
        and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
    ):
        namespace, rest = rest[1], rest[2:]
    plural = rest[0] if rest else None
    name = rest[1] if len(rest) >= 2 else None
    subresource = "/".join(rest[2:]) or None
    return ApiPath(group, version, plural, namespace, name, subresource)


def _guess_action(
    path: ApiPath | None, method: kmock.method, params: Mapping[str, str]
) -> kmock.action | None:
    if path is None or path.plural is None:
        return kmock.action.LIST if path is not None and method == kmock.method.GET else None
    if method == kmock.method.GET:
        return (
            kmock.action.WATCH if params.get("watch") in ("true", "1")
            else kmock.action.FETCH if path.name else kmock.action.LIST
        )  # fmt: skip
    if path.name is None:
        return kmock.action.CREATE if method == kmock.method.POST else None
    return {kmock.method.PATCH: kmock.action.UPDATE, kmock.method.DELETE: kmock.action.DELETE}.get(method)


def _number(params: Mapping[str, str], name: str, kind: Callable[[str], N]) -> N | None:
    try:
        return kind(params[name]) if params.get(name) else None
    except ValueError:
        raise bad_request(f"invalid {name}: {params[name]!r}") from None


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _verb_and_resource(request: kmock.Request) -> tuple[str, str]:
    if request.resource is None or request.resource.plural is None:
        return str(request.method.value).lower(), "/" + request.url.path.strip("/").split("/")[0]
    resource = request.resource.plural + (f"/{request.subresource}" if request.subresource else "")
    if request.action == kmock.action.WATCH:
        return "watch", resource
    if request.method == kmock.method.GET:
        return ("get" if request.name else "list"), resource
    return _VERBS.get(str(request.method.value), str(request.method.value).lower()), resource


def _strict(request: kmock.Request) -> bool:
    """`fieldValidation=Strict` (kubectl's default): unknown fields are refused instead of pruned."""
    return request.params.get("fieldValidation") == "Strict"


def _accepted(request: kmock.Request) -> str:
    return next((str(v) for k, v in request.headers.items() if k.lower() == "accept"), "")


def status_body(error: kmock.KubernetesError) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": error.message or "",
        "reason": error.reason or "",
        "code": error.status,
    }
    if error.details:
        body["details"] = error.details
    return body


@attrs.define(kw_only=True)
class KubeApiEmulator(kmock.KubernetesScaffold):
    watch_history_limit: int | None = None  # beyond this many events, old watch positions are 410 Gone
    record_requests: bool = True  # keep every request for kmock's views (`emulator[...]`); off for benchmarks

    catalog: ResourceCatalog = attrs.field(init=False)
    state: ClusterState = attrs.field(init=False)
    failures: list[BaseException] = attrs.field(factory=list, init=False)  # unexpected errors (500s)
    _objects: kmock.ObjectsArray = attrs.field(factory=kmock.ObjectsArray, init=False)
    _counts: collections.Counter[tuple[str, str]] = attrs.field(factory=collections.Counter, init=False)
    _by_resource: collections.Counter[tuple[str, str, str]] = attrs.field(
        factory=collections.Counter, init=False
    )
    _counts_lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    _own_reactions: int = attrs.field(default=0, init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()  # discovery, /version, 404 for unknown endpoints
        self.catalog = ResourceCatalog(self.resources)
        self.state = ClusterState(self.catalog, self._objects, watch_history_limit=self.watch_history_limit)
        self.fallback << self._route
        self._own_reactions = len(self._payloads)

    @property
    def objects(self) -> kmock.ObjectsArray:
        """All objects ever stored, with their history; keyed by `kmock.resource(group=..., plural=...)`."""
        return self._objects

    def counts(self) -> dict[tuple[str, str], int]:
        """Requests served so far, by (method, client); the client is the `User-Agent` product."""
        with self._counts_lock:
            return dict(self._counts)

    def counts_by_resource(self) -> dict[tuple[str, str, str], int]:
        """Requests served so far, by (client, verb, resource): the verb as the API server's audit log
        names it (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`), the resource as
        `plural[/subresource]` (`/api`, `/openapi`... for the rest)."""
        with self._counts_lock:
            return dict(self._by_resource)

    def served(self, method: str, plural: str, name: str | None = None) -> int:
        """Recorded requests with `method` on a resource (by plural), or on one object of it (`name`)."""
        return sum(
            1
            for request in list(self._requests)
            if request.method == kmock.method(method.upper())
            and request.resource is not None
            and request.resource.plural == plural
            and (name is None or request.name == name)
        )

    def close(self) -> None:
        """End all watch streams (before the server shuts down)."""
        self.state.close()

    # --- HTTP entry point ---

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        agent = raw_request.headers.get("User-Agent", "").split("/", 1)[0] or "unknown"
        with self._counts_lock:
            self._counts[raw_request.method, agent] += 1
        raw_response: aiohttp.web.StreamResponse | None = None
        try:
            request = await self._parse_request(raw_request)
            with self._counts_lock:
                self._by_resource[(agent, *_verb_and_resource(request))] += 1
            if self.record_requests or len(self._payloads) > self._own_reactions:
                self._requests.append(request)  # kmock's reactions only see recorded requests
            try:
                return await self._handle(request)
            except StreamingError as e:  # the response has started: finish it with an error line
                raw_response = e.args[0]
                raise e.__cause__ or e from None
        except Exception as e:
            if not isinstance(e, kmock.KubernetesError):
                self.failures.append(e)
                where = f"{raw_request.method} {raw_request.path_qs}"
                logger.error("The Kubernetes API emulator failed on %s", where, exc_info=True)
            if raw_response is None or not raw_response.prepared:
                return await self._render_error(e)
            await self._stream_error(e, raw_response)
            await raw_response.write_eof()
            return raw_response

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        # kmock matches a request against a reaction by scanning every request served so far, so each
        # request costs more than the last. Pay that only when a test has added reactions of its own.
        if len(self._payloads) > self._own_reactions:
            return await super()._handle(request)
        return await Response(payload=await self._route(request))(request)

    async def _route(self, request: kmock.Request) -> kmock.Payload:
        """Everything the emulator serves by itself (also registered as kmock's last fallback)."""
        path = request.url.path.rstrip("/") or "/"
        if request.method == kmock.method.GET:
            static = {
                "/": self._serve_root,
                "/version": self._serve_server_version,
                "/api": self._serve_api,
                "/apis": self._serve_apis,
            }
            if path in static:
                return await static[path](request)
            if path == "/openapi/v3" or path.startswith("/openapi/v3/"):
                return self._serve_openapi(path.removeprefix("/openapi/v3").strip("/"))
            if path in ("/healthz", "/livez", "/readyz"):
                return b"ok"
        if self._is_resource_request(request):
            return await self._serve_resource(request)
        if request.method == kmock.method.GET and request.resource is not None:
            group, version = request.resource.group, request.resource.version
            if version is None:
                return await self._serve_group(request)
            if group and not any((rtype.group, rtype.version) == (group, version) for rtype in self.catalog):
                raise not_found()
            return await self._serve_version(request)
        raise not_found()

    async def _parse_request(self, raw_request: aiohttp.web.BaseRequest) -> kmock.Request:
        body = await raw_request.read()
        data: Any = None
        if body:
            try:
                data = json.loads(body)
            except ValueError:
                data = None
        params = dict(raw_request.query)
        method = kmock.method(raw_request.method)
        path = parse_api_path(raw_request.path)
        resource = None
        if path is not None:
            resource = kmock.resource(group=path.group, version=path.version, plural=path.plural)
        return kmock.Request(
            id=len(self._requests),
            raw_request=raw_request,
            url=raw_request.url,
            method=method,
            params=params,
            headers=dict(raw_request.headers),
            cookies=dict(raw_request.cookies),
            body=body,
            text=body.decode("utf-8", errors="replace"),
            data=data,
            action=_guess_action(path, method, params),
            resource=resource,
            namespace=path.namespace if path else None,
            name=path.name if path else None,
            subresource=path.subresource if path else None,
        )

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        if isinstance(exc, kmock.KubernetesError):
            return aiohttp.web.json_response(status_body(exc), status=exc.status)
        error = kmock.KubernetesError(
            status=500, reason="InternalError", message=f"the emulator failed: {exc!r}",
            details={"traceback": traceback.format_exception(exc)},
        )  # fmt: skip
        return aiohttp.web.json_response(status_body(error), status=500)

    # --- discovery: deterministic preferred versions (kmock picks one from a set) ---

    async def _serve_apis(self, request: kmock.Request) -> kmock.Payload:
        groups = sorted({rtype.group for rtype in self.catalog if rtype.group})
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [self._group(group) for group in groups],
        }

    async def _serve_group(self, request: kmock.Request) -> kmock.Payload:
        assert request.resource is not None
        if request.resource.group not in {rtype.group for rtype in self.catalog}:
            raise not_found()
        return {"kind": "APIGroup", "apiVersion": "v1", **self._group(request.resource.group or "")}

    def _group(self, group: str) -> dict[str, Any]:
        versions = [
            {"groupVersion": f"{group}/{version}", "version": version}
            for version in self.catalog.versions(group)
        ]
        return {"name": group, "versions": versions, "preferredVersion": versions[0]}

    async def _serve_version(self, request: kmock.Request) -> kmock.Payload:
        """`/api/v1`, `/apis/{group}/{version}` as the API server renders them (kmock's says `/v1` for the
        core group, and gives subresources the short names and categories of their kind, which kubectl
        then resolves ambiguously)."""
        assert request.resource is not None
        group, version = request.resource.group or "", request.resource.version
        served = [rtype for rtype in self.catalog if (rtype.group, rtype.version) == (group, version)]
        if not served:
            raise not_found()
        entries: list[dict[str, Any]] = []
        for rtype in sorted(served, key=lambda r: r.plural):
            entry: dict[str, Any] = {
                "name": rtype.plural,
                "singularName": rtype.singular,
                "namespaced": rtype.namespaced,
                "kind": rtype.kind,
                "verbs": sorted(VERBS),
            }
            if rtype.shortnames:
                entry["shortNames"] = sorted(rtype.shortnames)
            if rtype.categories:
                entry["categories"] = sorted(rtype.categories)
            entries.append(entry)
            entries += [
                {
                    "name": f"{rtype.plural}/{sub}",
                    "singularName": "",
                    "namespaced": rtype.namespaced,
                    "kind": rtype.kind,
                    "verbs": ["get", "patch", "update"],
                }
                for sub in sorted(rtype.subresources)
            ]
        group_version = f"{group}/{version}" if group else str(version)
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version,
            "resources": entries,
        }

    def _openapi_documents(self) -> dict[str, dict[str, Any]]:
        by_group_version: dict[str, list[ResourceType]] = collections.defaultdict(list)
        for rtype in self.catalog:
            by_group_version[openapi.group_version_path(rtype.group, rtype.version)].append(rtype)
        return {path: openapi.document(types) for path, types in by_group_version.items()}

    def _serve_openapi(self, group_version: str) -> kmock.Payload:
        documents = self._openapi_documents()
        if not group_version:
            return openapi.index(documents)
        if group_version not in documents:
            raise not_found()
        return documents[group_version]

    def _get_resources(self) -> list[kmock.resource]:
        return [rtype.key for rtype in self.catalog]

    # --- resources ---

    @staticmethod
    def _is_resource_request(request: kmock.Request) -> bool:
        return request.resource is not None and request.resource.plural is not None

    def _served_type(self, request: kmock.Request) -> ResourceType:
        """The resource type a request is about; 404 for what the API server does not serve."""
        assert request.resource is not None
        rtype = self.catalog.get(request.resource)
        if rtype is None or (request.namespace is not None and not rtype.namespaced):
            raise not_found()
        if request.subresource not in (None, "status") or (request.subresource and not rtype.has_status):
            raise not_found()
        if request.name is not None and rtype.namespaced and request.namespace is None:
            raise not_found()
        return rtype

    async def _serve_resource(self, request: kmock.Request) -> kmock.Payload:
        rtype = self._served_type(request)
        namespace, name, method = request.namespace, request.name, request.method
        if method == kmock.method.GET and request.params.get("watch") in ("true", "1"):
            return self._watch(rtype, request)
        if method == kmock.method.GET and name is None:
            return self._list(rtype, request)
        if method == kmock.method.GET:
            assert name is not None
            obj = self.state.get(rtype, namespace, name)
            if tables.wants_table(_accepted(request)):
                return Response(
                    status=200,
                    headers=_JSON,
                    payload=tables.table(rtype, [obj], str(self.state.resource_version)),
                )
            return Response(status=200, headers=_JSON, payload=obj)
        if method == kmock.method.POST and name is None:
            if rtype.namespaced and namespace is None:
                raise not_found()
            created = self.state.create(rtype, namespace, request.data, strict=_strict(request))
            return Response(status=201, headers=_JSON, payload=created)
        if method == kmock.method.PUT and name is not None:
            replaced = self.state.replace(
                rtype, namespace, name, request.data, subresource=request.subresource, strict=_strict(request)
            )
            return Response(status=200, headers=_JSON, payload=replaced)
        if method == kmock.method.PATCH and name is not None:
            return self._patch(rtype, request, name)
        if method == kmock.method.DELETE and name is not None:
            return self._delete(rtype, request, name)
        if method == kmock.method.DELETE:
            return self._delete_collection(rtype, request)
        raise kmock.KubernetesError(
            status=405, reason="MethodNotAllowed",
            message="the server does not allow this method on the requested resource",
        )  # fmt: skip

    def _list(self, rtype: ResourceType, request: kmock.Request) -> kmock.Payload:
        params = request.params
        limit = _number(params, "limit", int) or 0
        continue_after = decode_continue(params["continue"]) if params.get("continue") else None
        items, last = self.state.list_objects(
            rtype, request.namespace, self._selector(request), limit=limit, continue_after=continue_after
        )
        metadata: dict[str, Any] = {"resourceVersion": str(self.state.resource_version)}
        if last is not None:
            metadata["continue"] = encode_continue(last)
        if tables.wants_table(_accepted(request)):
            shown = tables.table(rtype, items, metadata["resourceVersion"])
            return Response(status=200, headers=_JSON, payload={**shown, "metadata": metadata})
        body = {
            "kind": f"{rtype.kind}List",
            "apiVersion": rtype.api_version,
            "metadata": metadata,
            "items": items,
        }
        return Response(status=200, headers=_JSON, payload=body)

    def _patch(self, rtype: ResourceType, request: kmock.Request, name: str) -> kmock.Payload:
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        if content_type not in patching.PATCH_TYPES:
            raise kmock.KubernetesError(
                status=415, reason="UnsupportedMediaType",
                message=f"the body of the request was in an unknown format - accepted media types include:"
                        f" {', '.join(patching.PATCH_TYPES)}",
            )  # fmt: skip
        patch = request.data
        if content_type == patching.APPLY_PATCH and patch is None:
            try:
                patch = yaml.safe_load(request.text)
            except yaml.YAMLError as e:
                raise bad_request(f"invalid YAML: {e}") from e
        obj, created = self.state.patch(
            rtype,
            request.namespace,
            name,
            content_type,
            patch,
            subresource=request.subresource,
            strict=_strict(request),
        )
        return Response(status=201 if created else 200, headers=_JSON, payload=obj)

    def _delete(self, rtype: ResourceType, request: kmock.Request, name: str) -> kmock.Payload:
        options = request.data if isinstance(request.data, dict) else {}
        obj, gone = self.state.delete(
            rtype,
            request.namespace,
            name,
            propagation=request.params.get("propagationPolicy") or options.get("propagationPolicy"),
            preconditions=options.get("preconditions"),
        )
        if gone and rtype.crd is None:
            # Built-in kinds answer with a Status once the object is gone; custom resources with the object.
            details = {
                "name": name,
                "group": rtype.group,
                "kind": rtype.plural,
                "uid": obj["metadata"]["uid"],
            }
            body = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": details,
            }
            return Response(status=200, headers=_JSON, payload=body)
        return Response(status=200, headers=_JSON, payload=obj)

    def _delete_collection(self, rtype: ResourceType, request: kmock.Request) -> kmock.Payload:
        items, _ = self.state.list_objects(rtype, request.namespace, self._selector(request))
        for item in items:
            with contextlib.suppress(kmock.KubernetesNotFoundError):  # collected with an earlier one
                self.state.delete(rtype, item["metadata"].get("namespace"), item["metadata"]["name"])
        body = {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version, "metadata": {}, "items": items}
        return Response(status=200, headers=_JSON, payload=body)

    @staticmethod
    def _selector(request: kmock.Request) -> selectors.Selector:
        try:
            labels = selectors.parse_label_selector(request.params.get("labelSelector"))
            fields = selectors.parse_field_selector(request.params.get("fieldSelector"))
        except selectors.SelectorError as e:
            raise bad_request(str(e)) from e
        name = request.name  # a watch on a named URL (the old style) watches that object only

        def matches(obj: Mapping[str, Any]) -> bool:
            return (name is None or obj["metadata"]["name"] == name) and labels(obj) and fields(obj)

        return matches

    # --- watching ---

    def _watch(self, rtype: ResourceType, request: kmock.Request) -> kmock.Payload:
        params = request.params
        matches = self._selector(request)
        timeout = _number(params, "timeoutSeconds", float)
        send_initial = params.get("sendInitialEvents") == "true"
        since = params.get("resourceVersion") or "0"
        initial: list[dict[str, Any]] = []
        if since == "0" or send_initial:
            # "Get state and start at most recent": synthetic ADDED events for what exists now.
            initial, _ = self.state.list_objects(rtype, request.namespace, matches)
            start = self.state.resource_version
        else:
            try:
                start = int(since)
            except ValueError as e:
                raise bad_request(f"invalid resourceVersion: {since!r}") from e
        stream = self._stream_events(rtype, request.namespace, matches, initial, start, send_initial, timeout)
        return Response(status=200, headers=_JSON, payload=stream)

    async def _stream_events(
        self,
        rtype: ResourceType,
        namespace: str | None,
        matches: selectors.Selector,
        initial: list[dict[str, Any]],
        cursor: int,
        send_initial: bool,
        timeout: float | None,
    ) -> AsyncIterator[kmock.Payload]:
        yield b""  # send the headers now: clients wait for them before they read events
        for obj in initial:
            yield {"type": "ADDED", "object": obj}
        if send_initial:
            annotations = {"k8s.io/initial-events-end": "true"}
            metadata = {"resourceVersion": str(cursor), "annotations": annotations}
            bookmark = {"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": metadata}
            yield {"type": "BOOKMARK", "object": bookmark}
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        storage = self.state.storage_of(rtype)
        while not self.state.closed and (deadline is None or loop.time() < deadline):
            changed = self.state.next_change()
            try:
                events = self.state.events_after(cursor)
            except kmock.KubernetesError as e:
                yield {"type": "ERROR", "object": status_body(e)}
                return
            for event in events:
                cursor = event.resource_version
                if event.storage == storage:
                    translated = self._translate(rtype, namespace, matches, event)
                    if translated is not None:
                        yield translated
            if not events:
                try:
                    async with asyncio.timeout_at(deadline):
                        await changed.wait()
                except TimeoutError:
                    return

    def _translate(
        self, rtype: ResourceType, namespace: str | None, matches: selectors.Selector, event: WatchEvent
    ) -> dict[str, Any] | None:
        """What a watcher sees: objects entering or leaving its selection are ADDED or DELETED for it."""

        def visible(obj: dict[str, Any] | None) -> bool:
            in_namespace = namespace is None or (obj or {}).get("metadata", {}).get("namespace") == namespace
            return obj is not None and in_namespace and matches(obj)

        now, before = visible(event.object), event.type != "ADDED" and visible(event.old)
        if event.type == "MODIFIED" and now != before:
            event_type = "ADDED" if now else "DELETED"
        elif now or (event.type == "DELETED" and before):
            event_type = event.type
        else:
            return None
        return {"type": event_type, "object": self.state.present(rtype, event.object)}
