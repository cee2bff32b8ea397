"""What the watches last saw, and what the operator last wrote: the cluster as a reconciliation reads it.

A reconciliation reads the bridge, its ConfigMap and SparkApplications, what its jobs make (their Leases
and health reports) and its checkpoint claim here instead of asking the API server each time (a GET or
LIST each per reconciliation before). Two sources keep it current:

- the watches: kopf hands every event to an index function before any handler (`main.py`), so what is
  read here is never older than what triggered the reconciliation;
- the operator's own writes: the API server's answer to a create, replace or status patch is kept until
  the watch brings that version or a newer one (`resourceVersion`), and a deletion hides the object until
  the watch says it is gone. So a reconciliation that follows its own write at once (a route arriving just
  after the bridge) sees that write, and does not make it again, post its Events again, or create twice.

A kind is `listed` when the operator watches all of it that a reconciliation looks for, with an index
function: kopf then holds every handler until the initial listing is in, so an object not here does not
exist (no GET to make sure). For other kinds, and for what is not here yet, `get` fetches, and keeps what it
fetched only when the watch selects it (`watched`): else no event would ever tell that it changed.
`fresh` reads bypass all of this: the periodic resync reads the cluster itself, a safety net for anything
a watch could have missed (a deletion while it was reconnecting).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from bridge_job.contract.clients import Resource

Key = tuple[str, str, str]  # (plural, namespace, name)
Fetch = Callable[[Resource, str, str], Mapping[str, Any] | None]
Watching = Callable[[Mapping[str, Any]], bool]  # whether the watch selects an object


def _metadata(body: Mapping[str, Any]) -> Mapping[str, Any]:
    return body.get("metadata") or {}


def _version(metadata: Mapping[str, Any]) -> int | None:
    """The resourceVersion as a number (etcd's revision), None when it is not one."""
    version = str(metadata.get("resourceVersion") or "")
    return int(version) if version.isdigit() else None


def _uid(metadata: Mapping[str, Any]) -> str | None:
    uid = metadata.get("uid")
    return str(uid) if uid else None


@dataclasses.dataclass(frozen=True)
class _Kept:
    """An object as kept: its metadata as is (versions, uid, labels for `select`), the rest as compact
    JSON, a fifth of the memory of the parsed object (a SparkApplication is 4 KB of JSON, 20 KB parsed),
    and a copy of its own for every reader."""

    metadata: Mapping[str, Any]
    packed: bytes

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> _Kept:
        metadata = {key: value for key, value in _metadata(body).items() if key != "managedFields"}
        rest = {key: value for key, value in body.items() if key != "metadata"}
        return cls(metadata, json.dumps(rest, separators=(",", ":")).encode())

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.packed)
        body["metadata"] = copy.deepcopy(self.metadata)
        return body

    def newer_than(self, incoming: Mapping[str, Any]) -> bool:
        """Whether `incoming` is an older version of this object (a watch behind our own write)."""
        if _uid(_metadata(incoming)) != _uid(self.metadata):
            return False
        new, old = _version(_metadata(incoming)), _version(self.metadata)
        return new is not None and old is not None and new < old


class Watched:
    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch
        self._objects: dict[Key, _Kept] = {}
        self._events: dict[Key, int] = {}  # per object, how many events were seen
        self._deleted: dict[Key, str] = {}  # deleted by us, not yet seen gone: the uid to hide
        self._listed: set[str] = set()  # plurals the watches hold completely
        self._lock = threading.Lock()

    def listed(self, *resources: Resource) -> None:
        """These kinds are watched whole, each event noted before any handler runs: absent means absent."""
        with self._lock:
            self._listed.update(resource.plural for resource in resources)

    def seen(self, resource: Resource, type: str | None, namespace: str, body: Mapping[str, Any]) -> None:
        """A watch event: the object as it is now, or gone."""
        key = (resource.plural, namespace, str((body.get("metadata") or {}).get("name")))
        with self._lock:
            self._events[key] = self._events.get(key, 0) + 1
            kept, uid = self._objects.get(key), _uid(_metadata(body))
            if type == "DELETED":
                if kept is None or uid is None or _uid(kept.metadata) == uid:
                    self._objects.pop(key, None)
                self._deleted.pop(key, None)
            elif key in self._deleted and self._deleted[key] == uid:
                pass  # deleted by us; the watch has not said so yet
            elif kept is None or not kept.newer_than(body):
                self._objects[key] = _Kept.of(body)

    def unselected(self, resource: Resource, namespace: str, body: Mapping[str, Any]) -> None:
        """A watch event of an object the cache does not keep (not ours): forgotten if it was kept."""
        key = (resource.plural, namespace, str((body.get("metadata") or {}).get("name")))
        with self._lock:
            if key in self._objects:
                self._objects.pop(key)
                self._events[key] = self._events.get(key, 0) + 1

    def wrote(self, resource: Resource, namespace: str, body: Mapping[str, Any]) -> None:
        """The API server's answer to our write: the object as it is now (unless the watch saw it newer)."""
        key = (resource.plural, namespace, str((body.get("metadata") or {}).get("name")))
        with self._lock:
            self._deleted.pop(key, None)
            kept = self._objects.get(key)
            if kept is None or not kept.newer_than(body):
                self._objects[key] = _Kept.of(body)

    def deleted(self, resource: Resource, namespace: str, name: str) -> None:
        """We deleted it: gone from here, and events of it still on their way do not bring it back."""
        key = (resource.plural, namespace, name)
        with self._lock:
            kept = self._objects.pop(key, None)
            if kept is not None and (uid := _uid(kept.metadata)) is not None:
                self._deleted[key] = uid

    def get(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        *,
        watched: Watching = lambda _: True,
        fresh: bool = False,
    ) -> Mapping[str, Any] | None:
        """The object as last seen, else (not seen, in a kind not `listed`; or `fresh`) fetched. A fetched
        object is kept only when the watch selects it (`watched`)."""
        key = (resource.plural, namespace, name)
        with self._lock:
            found, events = self._objects.get(key), self._events.get(key, 0)
            listed = resource.plural in self._listed
        if found is not None and not fresh:
            return found.body()
        if listed and not fresh:
            return None
        fetched = self._fetch(resource, namespace, name)
        with self._lock:
            if fetched is not None and watched(fetched) and self._events.get(key, 0) == events:
                self._objects[key] = _Kept.of(fetched)
        return fetched

    def select(
        self, resource: Resource, namespace: str, matches: Callable[[Mapping[str, Any]], bool]
    ) -> list[Mapping[str, Any]] | None:
        """The objects of a `listed` kind in `namespace` whose metadata matches, by name; None when the
        kind is not listed (the caller lists it itself)."""
        with self._lock:
            if resource.plural not in self._listed:
                return None
            found = {
                name: kept
                for (plural, where, name), kept in self._objects.items()
                if plural == resource.plural and where == namespace and matches({"metadata": kept.metadata})
            }
        return [found[name].body() for name in sorted(found)]
