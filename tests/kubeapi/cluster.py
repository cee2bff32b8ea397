"""
The state of the emulated cluster: stored objects and the ordered log of what happened to them.

Every successful write takes the next value of one global counter as the object's
`metadata.resourceVersion` and appends one watch event (ADDED, MODIFIED or DELETED) with that
version to the log, so a watch can resume from any version it has seen: it gets exactly the events
after it. Writes that change nothing change nothing: no new version, no event (kopf relies on this
when it waits for its own patches to come back through the watch).

The rest is the object lifecycle the API server and its controllers implement and an operator
depends on: uids, generations (bumped only by changes outside metadata and status), the status
subresource, optimistic concurrency (409 on a stale resourceVersion), generateName, finalizers
(deletion only marks the object until they are all removed) and garbage collection of dependents
through ownerReferences.

This module knows nothing about HTTP; it raises `kmock.KubernetesError` with the status, reason and
message the real server uses, and the emulator renders them as `Status` bodies.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import copy
import dataclasses
import datetime
import json
import random
import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import kmock

from tests.kubeapi import admission, patching, resources
from tests.kubeapi.resources import ResourceCatalog, ResourceType

StorageKey = tuple[str, str]  # (group, plural): all versions of a kind share one storage
ObjectKey = tuple[str | None, str]  # (namespace, name)
Predicate = Callable[[Mapping[str, Any]], bool]

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_GENERATED_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # as the API server's name generator
_SERVER_MANAGED = ("uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
                   "deletionGracePeriodSeconds", "selfLink")  # fmt: skip
_IMMUTABLE = (
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclasses.dataclass(frozen=True)
class WatchEvent:
    resource_version: int
    storage: StorageKey
    type: str  # ADDED, MODIFIED, DELETED
    object: dict[str, Any]
    old: dict[str, Any] | None  # the previous state, to move objects in and out of selectors


def _error(status: int, reason: str, message: str, **details: Any) -> kmock.KubernetesError:
    return kmock.KubernetesError(status=status, reason=reason, message=message, details=details)


def not_found(rtype: ResourceType | None = None, name: str | None = None) -> kmock.KubernetesNotFoundError:
    if rtype is None or name is None:
        return kmock.KubernetesNotFoundError(
            reason="NotFound", message="the server could not find the requested resource"
        )
    return kmock.KubernetesNotFoundError(
        reason="NotFound", message=f'{rtype.qualified_plural} "{name}" not found',
        details={"name": name, "group": rtype.group, "kind": rtype.plural},
    )  # fmt: skip


def bad_request(message: str) -> kmock.KubernetesError:
    return _error(400, "BadRequest", message)


def invalid(rtype: ResourceType, name: str, field: str, message: str) -> kmock.KubernetesError:
    return _error(
        422, "Invalid", f'{rtype.kind} "{name}" is invalid: {field}: {message}',
        name=name, group=rtype.group, kind=rtype.kind,
        causes=[{"reason": "FieldValueInvalid", "message": message, "field": field}],
    )  # fmt: skip


def conflict(rtype: ResourceType, name: str) -> kmock.KubernetesError:
    return _error(
        409, "Conflict",
        f'Operation cannot be fulfilled on {rtype.qualified_plural} "{name}": the object has been modified;'
        " please apply your changes to the latest version and try again",
        name=name, group=rtype.group, kind=rtype.plural,
    )  # fmt: skip


def gone(since: int, oldest: int) -> kmock.KubernetesError:
    return _error(410, "Expired", f"too old resource version: {since} ({oldest})")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _content(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What `metadata.generation` tracks: everything except metadata and status."""
    return {
        key: value for key, value in obj.items() if key not in ("metadata", "status", "apiVersion", "kind")
    }


def _uids_of_owners(obj: Mapping[str, Any]) -> list[str]:
    return [ref.get("uid", "") for ref in obj.get("metadata", {}).get("ownerReferences") or []]


def encode_continue(key: ObjectKey) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode()


def decode_continue(token: str) -> ObjectKey:
    try:
        namespace, name = json.loads(base64.urlsafe_b64decode(token.encode()))
    except ValueError as e:
        raise bad_request(f"invalid continue token: {token!r}") from e
    return namespace, name


class ClusterState:
    def __init__(
        self,
        catalog: ResourceCatalog,
        history: kmock.ObjectsArray,
        *,
        watch_history_limit: int | None = None,
    ) -> None:
        self.catalog = catalog
        self._history = history
        self._objects: dict[StorageKey, dict[ObjectKey, dict[str, Any]]] = {}
        self._owners_by_uid: dict[str, tuple[StorageKey, ObjectKey]] = {}
        self._orphaning: set[str] = set()  # uids deleted with propagationPolicy=Orphan, pending finalizers
        self._resource_version = 0
        self._log: list[WatchEvent] = []
        self._oldest_watchable = 0  # a watch from a version below this one gets 410 Gone
        self._watch_history_limit = watch_history_limit
        self._changed = asyncio.Event()
        self.closed = False
        self.validation_rules = True  # the CRDs' CEL rules; off: as a server before 1.25 stores objects
        namespaces = self._rtype(resources.NAMESPACES)
        for name in INITIAL_NAMESPACES:
            self.create(namespaces, None, {"metadata": {"name": name}})

    # --- reading ---

    @property
    def resource_version(self) -> int:
        return self._resource_version

    def get(self, rtype: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        return self._present(rtype, self._stored(rtype, namespace, name))

    def list_objects(
        self,
        rtype: ResourceType,
        namespace: str | None,
        match: Predicate = lambda obj: True,
        *,
        limit: int | None = None,
        continue_after: ObjectKey | None = None,
    ) -> tuple[list[dict[str, Any]], ObjectKey | None]:
        """Matching objects ordered by namespace and name, and the last key if the page is cut short."""
        storage = self._objects.get(self._storage(rtype), {})
        keys = sorted(
            (key for key in storage if namespace is None or key[0] == namespace),
            key=lambda key: (key[0] or "", key[1]),
        )
        if continue_after is not None:
            after = (continue_after[0] or "", continue_after[1])
            keys = [key for key in keys if (key[0] or "", key[1]) > after]
        items: list[dict[str, Any]] = []
        for key in keys:
            if match(storage[key]):
                if limit and len(items) == limit:
                    return items, (items[-1]["metadata"].get("namespace"), items[-1]["metadata"]["name"])
                items.append(self._present(rtype, storage[key]))
        return items, None

    def history(self, rtype: ResourceType, namespace: str | None, name: str) -> list[dict[str, Any] | None]:
        """Every version the object ever had, `None` where it was deleted (from kmock's object history)."""
        key = self._history_key(self._storage(rtype), (namespace if rtype.namespaced else None, name))
        if key not in self._history:
            return []
        return [
            None if version is None else copy.deepcopy(version.raw) for version in self._history[key].history
        ]

    def events_after(self, resource_version: int) -> list[WatchEvent]:
        if resource_version < self._oldest_watchable:
            raise gone(resource_version, self._oldest_watchable)
        start = bisect.bisect_right(self._log, resource_version, key=lambda event: event.resource_version)
        return self._log[start:]

    def next_change(self) -> asyncio.Event:
        """An event that is set on the next write (or on closing)."""
        return self._changed

    def close(self) -> None:
        self.closed = True
        self._notify()

    def present(self, rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """An object as served through one version of its kind."""
        return self._present(rtype, obj)

    def storage_of(self, rtype: ResourceType) -> StorageKey:
        return self._storage(rtype)

    # --- writing ---

    def create(
        self, rtype: ResourceType, namespace: str | None, body: Any, *, strict: bool = False
    ) -> dict[str, Any]:
        obj = self._check_body(rtype, body)
        metadata = obj.setdefault("metadata", {})
        namespace = self._check_namespace(rtype, namespace, metadata)
        name = metadata.get("name") or self._generate_name(rtype, namespace, metadata.get("generateName"))
        self._check_name(rtype, name)
        storage = self._storage(rtype)
        if (namespace, name) in self._objects.get(storage, {}):
            raise _error(
                409, "AlreadyExists", f'{rtype.qualified_plural} "{name}" already exists',
                name=name, group=rtype.group, kind=rtype.plural,
            )  # fmt: skip
        for field in _SERVER_MANAGED:
            metadata.pop(field, None)
        metadata.update(name=name, uid=str(uuid.uuid4()), generation=1, creationTimestamp=_now())
        if namespace is None:
            metadata.pop("namespace", None)
        else:
            metadata["namespace"] = namespace
        self._check_metadata(rtype, obj)
        if rtype.has_status:
            obj.pop("status", None)  # only the /status subresource writes it
        if rtype.key == resources.NAMESPACES:
            obj["status"] = {"phase": "Active"}
        if rtype.key == resources.CRDS:
            self._admit_crd(rtype, obj)
        obj = self._admitted(rtype, obj, None, strict=strict)
        if namespace is not None:
            self._ensure_namespace(namespace)
        self._commit(storage, (namespace, name), obj, "ADDED", None)
        if rtype.key == resources.CRDS:
            self._register_crd(obj)
        return self._present(rtype, obj)

    def replace(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None,
        strict: bool = False,
    ) -> dict[str, Any]:
        old = self._stored(rtype, namespace, name)
        candidate = self._check_body(rtype, body)
        metadata = candidate.get("metadata") or {}
        if metadata.get("name", name) != name:
            raise bad_request(
                f"the name of the object ({metadata.get('name')}) does not match the name on the URL ({name})"
            )
        resource_version = metadata.get("resourceVersion")
        if resource_version is None and rtype.crd is not None and subresource is None:
            raise invalid(rtype, name, "metadata.resourceVersion", "must be specified for an update")
        if resource_version is not None and resource_version != old["metadata"]["resourceVersion"]:
            raise conflict(rtype, name)
        return self._update(rtype, old, candidate, subresource, strict=strict)

    def patch(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        patch_type: str,
        patch: Any,
        *,
        subresource: str | None,
        strict: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        """Apply a patch; returns the object and whether it was created (server-side apply only)."""
        try:
            old = self._stored(rtype, namespace, name)
        except kmock.KubernetesNotFoundError:
            if patch_type != patching.APPLY_PATCH or subresource is not None or not isinstance(patch, dict):
                raise
            body = copy.deepcopy(patch)
            body.setdefault("metadata", {})["name"] = name
            return self.create(rtype, namespace, body, strict=strict), True
        try:
            candidate = patching.apply_patch(self._present(rtype, old), patch_type, patch)
        except patching.PatchError as e:
            raise _error(422, "Invalid", str(e), name=name, group=rtype.group, kind=rtype.kind) from e
        resource_version = (candidate.get("metadata") or {}).get("resourceVersion")
        if resource_version is not None and resource_version != old["metadata"]["resourceVersion"]:
            raise conflict(rtype, name)
        return self._update(rtype, old, candidate, subresource, strict=strict), False

    def delete(
        self,
        rtype: ResourceType,
        namespace: str | None,
        name: str,
        *,
        propagation: str | None = None,
        preconditions: Mapping[str, Any] | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Delete or, with finalizers, mark for deletion; returns the object and whether it is gone."""
        old = self._stored(rtype, namespace, name)
        for field in ("uid", "resourceVersion"):
            expected = (preconditions or {}).get(field)
            if expected is not None and expected != old["metadata"].get(field):
                raise conflict(rtype, name)
        if propagation == "Orphan":
            self._orphaning.add(old["metadata"]["uid"])
        if old["metadata"].get("finalizers"):
            if old["metadata"].get("deletionTimestamp"):
                return self._present(rtype, old), False
            marked = copy.deepcopy(old)
            marked["metadata"].update(deletionTimestamp=_now(), deletionGracePeriodSeconds=0)
            key = (marked["metadata"].get("namespace"), name)
            self._commit(self._storage(rtype), key, marked, "MODIFIED", old)
            return self._present(rtype, marked), False
        return self._present(rtype, self._remove(rtype, old)), True

    # --- internals ---

    def _rtype(self, key: kmock.resource) -> ResourceType:
        rtype = self.catalog.get(key)
        assert rtype is not None, key
        return rtype

    def _rtype_of_storage(self, storage: StorageKey) -> ResourceType | None:
        for rtype in self.catalog:
            if (rtype.group, rtype.plural) == storage:
                return rtype
        return None

    @staticmethod
    def _storage(rtype: ResourceType) -> StorageKey:
        return (rtype.group, rtype.plural)

    @staticmethod
    def _history_key(storage: StorageKey, key: ObjectKey) -> tuple[kmock.resource, str | None, str]:
        return (kmock.resource(group=storage[0], plural=storage[1]), key[0], key[1])

    def _stored(self, rtype: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        key = (namespace if rtype.namespaced else None, name)
        obj = self._objects.get(self._storage(rtype), {}).get(key)
        if obj is None:
            raise not_found(rtype, name)
        return obj

    @staticmethod
    def _present(rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        # Shallow: stored objects are never modified in place (every write stores a new copy),
        # so what we hand out may share their nested parts as long as nobody mutates it.
        return {**obj, "apiVersion": rtype.api_version, "kind": rtype.kind}

    @staticmethod
    def _check_body(rtype: ResourceType, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        if body.get("kind") not in (None, rtype.kind):
            raise bad_request(f"the kind {body['kind']!r} does not match the endpoint of {rtype.kind}")
        if not isinstance(body.get("metadata", {}), dict):
            raise bad_request("metadata must be an object")
        obj = copy.deepcopy(body)
        obj["apiVersion"] = rtype.api_version
        obj["kind"] = rtype.kind
        return obj

    @staticmethod
    def _check_namespace(rtype: ResourceType, namespace: str | None, metadata: dict[str, Any]) -> str | None:
        if not rtype.namespaced:
            return None
        in_body = metadata.get("namespace")
        if namespace is not None and in_body not in (None, "", namespace):
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        namespace = namespace or in_body
        if not namespace:
            raise bad_request("a namespace is required for a namespaced resource")
        return str(namespace)

    def _check_name(self, rtype: ResourceType, name: Any) -> None:
        pattern = _DNS_LABEL if rtype.key == resources.NAMESPACES else _DNS_SUBDOMAIN
        if not isinstance(name, str) or len(name) > 253 or not pattern.match(name):
            raise invalid(
                rtype,
                str(name),
                "metadata.name",
                f"Invalid value: {name!r}: must be a lowercase RFC 1123 name",
            )

    def _generate_name(self, rtype: ResourceType, namespace: str | None, prefix: Any) -> str:
        if not prefix:
            raise invalid(rtype, "", "metadata.name", "Required value: name or generateName is required")
        existing = self._objects.get(self._storage(rtype), {})
        while True:
            name = f"{prefix}{''.join(random.choices(_GENERATED_CHARS, k=5))}"
            if (namespace, name) not in existing:
                return name

    def _check_metadata(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        metadata = obj["metadata"]
        name = metadata["name"]
        for field in ("labels", "annotations"):
            values = metadata.get(field)
            if values is None:
                continue
            if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
                raise bad_request(f"metadata.{field} must be a map of strings to strings")
            for key in values:
                key_name = str(key).rpartition("/")[2]
                if len(key_name) > 63 or not _LABEL_NAME.match(key_name):
                    raise invalid(
                        rtype, name, f"metadata.{field}", f"Invalid value: {key!r}: not a qualified name"
                    )
        for key, value in (metadata.get("labels") or {}).items():
            if value and (len(value) > 63 or not _LABEL_NAME.match(value)):
                raise invalid(
                    rtype, name, f"metadata.labels.{key}", f"Invalid value: {value!r}: not a label value"
                )
        if not isinstance(metadata.get("finalizers") or [], list):
            raise bad_request("metadata.finalizers must be a list")

    def _admitted(
        self,
        rtype: ResourceType,
        obj: dict[str, Any],
        subresource: str | None,
        *,
        strict: bool,
        old: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A custom resource as its CRD's schema admits it (admission.py): pruned, defaulted, its CEL
        rules kept (on an update, by what changed). A write of the status subresource is judged on its
        status alone."""
        if rtype.schema is None:
            return obj
        name = obj["metadata"]["name"]
        schema: Mapping[str, Any] = rtype.schema
        part: Any = obj
        before: Any = old if old is not None else admission.ABSENT
        path: tuple[str, ...] = ()
        if subresource == "status":
            schema = (rtype.schema.get("properties") or {}).get("status") or {}
            part, path = obj.get("status"), ("status",)
            before = (old or {}).get("status", admission.ABSENT)
            if part is None:
                return obj
        kept, unknown = admission.pruned(schema, part, path)
        if unknown and strict:
            fields = ", ".join(f'unknown field "{field}"' for field in unknown)
            raise bad_request(f"strict decoding error: {fields}")
        stored = admission.defaulted(schema, kept)
        if self.validation_rules and (broken := admission.rejections(schema, stored, path, before)):
            causes = [
                {
                    "reason": "FieldValueInvalid",
                    "message": f'Invalid value: "object": {r.message}',
                    "field": r.where,
                }
                for r in broken
            ]
            listed = ", ".join(f"{cause['field']}: {cause['message']}" for cause in causes)
            raise _error(
                422, "Invalid", f'{rtype.kind}.{rtype.group} "{name}" is invalid: [{listed}]',
                name=name, group=rtype.group, kind=rtype.kind, causes=causes,
            )  # fmt: skip
        return {**obj, "status": stored} if subresource == "status" else stored

    def _ensure_namespace(self, namespace: str) -> None:
        """Namespaced objects always live in an existing namespace: create it on first use."""
        if (None, namespace) not in self._objects.get(("", "namespaces"), {}):
            self.create(self._rtype(resources.NAMESPACES), None, {"metadata": {"name": namespace}})

    def _update(
        self,
        rtype: ResourceType,
        old: dict[str, Any],
        candidate: dict[str, Any],
        subresource: str | None,
        *,
        strict: bool = False,
    ) -> dict[str, Any]:
        name = old["metadata"]["name"]
        if subresource == "status":
            new = copy.deepcopy(old)
            if "status" in candidate:
                new["status"] = copy.deepcopy(candidate["status"])
            else:
                new.pop("status", None)
            new = self._admitted(rtype, new, subresource, strict=strict, old=old)
        else:
            new = self._updated_main_resource(rtype, old, candidate, strict=strict)
        new["apiVersion"] = old["apiVersion"]
        new["kind"] = old["kind"]
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if new == old:
            return self._present(rtype, old)  # a no-op: no new version, no event
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            return self._present(rtype, self._remove(rtype, new, previous=old))
        self._commit(self._storage(rtype), (new["metadata"].get("namespace"), name), new, "MODIFIED", old)
        if rtype.key == resources.CRDS:
            self._register_crd(new)
        return self._present(rtype, new)

    def _updated_main_resource(
        self, rtype: ResourceType, old: dict[str, Any], candidate: dict[str, Any], *, strict: bool
    ) -> dict[str, Any]:
        """An update of the object itself: immutable metadata and the status kept, the generation counted."""
        name = old["metadata"]["name"]
        new = copy.deepcopy(candidate)
        new.setdefault("metadata", {})
        if not isinstance(new["metadata"], dict):
            raise bad_request("metadata must be an object")
        for field in (*_IMMUTABLE, "generation"):
            new["metadata"].pop(field, None)
            if field in old["metadata"]:
                new["metadata"][field] = old["metadata"][field]
        if rtype.has_status:
            new.pop("status", None)
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
        self._check_metadata(rtype, new)
        new = self._admitted(
            rtype, new, None, strict=strict, old=old
        )  # before counting: defaults are no change
        added = set(new["metadata"].get("finalizers") or []) - set(old["metadata"].get("finalizers") or [])
        if old["metadata"].get("deletionTimestamp") and added:
            raise invalid(
                rtype, name, "metadata.finalizers",
                "Forbidden: no new finalizers can be added if the object is being deleted",
            )  # fmt: skip
        if _content(new) != _content(old):
            new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        if rtype.key == resources.CRDS:
            self._admit_crd(rtype, new)
        return new

    def _remove(
        self, rtype: ResourceType, obj: dict[str, Any], *, previous: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Remove the object for good, then let the garbage collector follow."""
        final = copy.deepcopy(obj)
        key = (final["metadata"].get("namespace"), final["metadata"]["name"])
        self._commit(self._storage(rtype), key, final, "DELETED", previous or obj)
        uid = final["metadata"]["uid"]
        orphan = uid in self._orphaning
        self._orphaning.discard(uid)
        if rtype.key == resources.CRDS:
            self._unregister_crd(final)
        if rtype.key == resources.NAMESPACES:
            self._empty_namespace(final["metadata"]["name"])
        self._collect_dependents(uid, orphan=orphan)
        return final

    def _collect_dependents(self, owner_uid: str, *, orphan: bool) -> None:
        dependents = [
            (storage, obj)
            for storage, objects in self._objects.items()
            for obj in objects.values()
            if owner_uid in _uids_of_owners(obj)
        ]
        for storage, obj in dependents:
            rtype = self._rtype_of_storage(storage)
            if rtype is None:
                continue
            namespace, name = obj["metadata"].get("namespace"), obj["metadata"]["name"]
            current = self._objects.get(storage, {}).get((namespace, name))
            if current is None or current["metadata"]["uid"] != obj["metadata"]["uid"]:
                continue  # already collected in a deeper cascade
            alive = [
                uid for uid in _uids_of_owners(current) if uid != owner_uid and uid in self._owners_by_uid
            ]
            if orphan or alive:
                released = copy.deepcopy(current)
                released["metadata"]["ownerReferences"] = [
                    ref for ref in current["metadata"]["ownerReferences"] if ref.get("uid") != owner_uid
                ]
                if not released["metadata"]["ownerReferences"]:
                    del released["metadata"]["ownerReferences"]
                self._commit(storage, (namespace, name), released, "MODIFIED", current)
            else:
                self.delete(rtype, namespace, name)

    def _empty_namespace(self, namespace: str) -> None:
        for storage, objects in list(self._objects.items()):
            rtype = self._rtype_of_storage(storage)
            if rtype is None or not rtype.namespaced:
                continue
            for key in [key for key in objects if key[0] == namespace]:
                if key in objects:
                    self.delete(rtype, namespace, key[1])

    def _commit(
        self,
        storage: StorageKey,
        key: ObjectKey,
        obj: dict[str, Any],
        event_type: str,
        old: dict[str, Any] | None,
    ) -> None:
        self._resource_version += 1
        obj["metadata"]["resourceVersion"] = str(self._resource_version)
        objects = self._objects.setdefault(storage, {})
        uid = obj["metadata"]["uid"]
        history_key = self._history_key(storage, key)
        if event_type == "DELETED":
            objects.pop(key, None)
            self._owners_by_uid.pop(uid, None)
        else:
            objects[key] = obj
            self._owners_by_uid[uid] = (storage, key)
        version = None if event_type == "DELETED" else obj
        if history_key in self._history:
            self._history[history_key].history.append(version)
        else:
            self._history[history_key] = [version]
        self._log.append(WatchEvent(self._resource_version, storage, event_type, obj, old))
        if self._watch_history_limit is not None and len(self._log) > self._watch_history_limit:
            dropped = self._log[: len(self._log) - self._watch_history_limit]
            del self._log[: len(dropped)]
            self._oldest_watchable = dropped[-1].resource_version
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # --- CustomResourceDefinitions: what the apiextensions controller does ---

    def _admit_crd(self, rtype: ResourceType, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        if not names.get("plural") or not names.get("kind") or not spec.get("group"):
            raise invalid(rtype, name, "spec", "Required value: group, names.plural and names.kind")
        if name != f"{names['plural']}.{spec['group']}":
            raise invalid(rtype, name, "metadata.name", 'must be spec.names.plural+"."+spec.group')
        if not spec.get("versions"):
            raise invalid(rtype, name, "spec.versions", "Required value: at least one version")
        storage = [version["name"] for version in spec["versions"] if version.get("storage")]
        status = crd.setdefault("status", {})
        status["acceptedNames"] = copy.deepcopy(names)
        stored = status.get("storedVersions") or []
        status["storedVersions"] = stored + [
            v for v in storage or [spec["versions"][0]["name"]] if v not in stored
        ]
        status.setdefault("conditions", [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                 "message": "no conflicts found", "lastTransitionTime": _now()},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted", "lastTransitionTime": _now()},
        ])  # fmt: skip

    def _register_crd(self, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        for rtype in self.catalog.declared_by(name):
            self.catalog.unregister(rtype)
        for rtype in resources.types_from_crd(crd):
            self.catalog.register(rtype)

    def _unregister_crd(self, crd: dict[str, Any]) -> None:
        declared = self.catalog.declared_by(crd["metadata"]["name"])
        if declared:
            rtype = declared[0]
            for obj in list(self._objects.get(self._storage(rtype), {}).values()):
                self._remove(rtype, obj)  # a deleted CRD takes its objects along, finalizers or not
        for rtype in declared:
            self.catalog.unregister(rtype)
