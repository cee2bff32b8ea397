"""What the operator watches but never writes, kept as the watch last saw it: the jobs' Leases and health
reports, and the standby pairs' checkpoint claims.

A reconciliation reads them here instead of asking the API server each time (one GET each per
reconciliation before). The watch handlers (`main.py`) note every event before they trigger the bridge's
reconciliation, so what is read here is never older than what triggered it. What is not here (not seen
yet: the operator just started, or the object does not exist) is fetched, and noted when it exists.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from bridge_job.kube.api import Resource

Key = tuple[str, str, str]  # (plural, namespace, name)
Fetch = Callable[[Resource, str, str], Mapping[str, Any] | None]
Watching = Callable[[Mapping[str, Any]], bool]  # whether the watch selects an object


class Watched:
    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch
        self._objects: dict[Key, Mapping[str, Any]] = {}
        self._events: dict[Key, int] = {}  # per object, how many events were seen
        self._lock = threading.Lock()

    def seen(self, resource: Resource, type: str | None, namespace: str, body: Mapping[str, Any]) -> None:
        """A watch event: the object as it is now, or gone."""
        key = (resource.plural, namespace, str((body.get("metadata") or {}).get("name")))
        with self._lock:
            self._events[key] = self._events.get(key, 0) + 1
            if type == "DELETED":
                self._objects.pop(key, None)
            else:
                self._objects[key] = body

    def get(
        self, resource: Resource, namespace: str, name: str, *, watched: Watching = lambda _: True
    ) -> Mapping[str, Any] | None:
        """The object as last seen, else fetched. A fetched object is kept only when the watch selects it
        (`watched`): else no event would ever tell that it changed."""
        key = (resource.plural, namespace, name)
        with self._lock:
            found, events = self._objects.get(key), self._events.get(key, 0)
        if found is not None:
            return found
        fetched = self._fetch(resource, namespace, name)
        with self._lock:
            if fetched is not None and watched(fetched) and self._events.get(key, 0) == events:
                self._objects[key] = fetched
        return fetched
