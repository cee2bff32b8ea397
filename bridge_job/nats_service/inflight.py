"""NATS requests sent to JMS and not answered yet, in this process.

Core NATS is at most once: a requester waits on its own connection's inbox, and a request in flight when
the bridge's process ends is lost (the requester times out and may ask again; docs/nats.md). So a
request's state is this process's memory, as long as the request lives, and nothing else: it goes with
its answer or at its deadline.

Each request is kept under the JMSCorrelationID the bridge gave it and, once sent, under the
JMSMessageID the provider gave it: a JMS service answers by copying either (the two JMS conventions), and
both find the request.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Request:
    reply: str  # the requester's reply subject
    route: str
    deadline: float  # time.monotonic()
    received: float  # when the bridge took the request (time.monotonic())


class InFlight:
    """The requests awaiting their answers, by correlation id and by message id; thread-safe."""

    def __init__(self) -> None:
        self._by_key: dict[str, Request] = {}
        self._keys: dict[int, list[str]] = {}  # id(request) -> its keys
        self._lock = threading.Lock()

    def add(self, key: str, request: Request) -> None:
        with self._lock:
            self._by_key[key] = request
            self._keys.setdefault(id(request), []).append(key)

    def also(self, key: str, request: Request) -> None:
        """The same request under a second key (its JMSMessageID)."""
        self.add(key, request)

    def take(self, key: str) -> Request | None:
        """The request `key` names, gone from the table (its answer came); None when unknown."""
        with self._lock:
            request = self._by_key.get(key)
            if request is not None:
                self._drop(request)
            return request

    def expired(self, now: float) -> list[Request]:
        """The requests past their deadline, gone from the table."""
        with self._lock:
            late = {id(r): r for r in self._by_key.values() if r.deadline <= now}
            for request in late.values():
                self._drop(request)
            return list(late.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._keys)

    def _drop(self, request: Request) -> None:
        for key in self._keys.pop(id(request), []):
            self._by_key.pop(key, None)
