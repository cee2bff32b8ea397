"""Child names someone else holds: looked at again with backoff, not retried every second.

A SparkApplication is found by label. One whose labels were removed by hand, or one of another owner that
carries the name the operator renders, is not listed, so the operator would create it and fail (409,
AlreadyExists) on every trigger. Instead, the first such failure reads the object by name and remembers
it here: planning then sees it, adopts it when it is ours after all (its ownerReference names the bridge:
the labels are put back), and otherwise says `NameConflict`. Until the next step of the backoff, every
reconciliation reuses what was read; at each step the name is read once more (one request per step, the
steps doubling up to a cap), and forgotten once the object is gone or listed again by label.
"""

from __future__ import annotations

import dataclasses
import datetime
import threading
from collections.abc import Callable, Collection, Mapping
from typing import Any

Key = tuple[str, str]  # (namespace, bridge)


@dataclasses.dataclass(frozen=True)
class Backoff:
    """Delays that double from `first` up to `cap` seconds."""

    first: float = 5.0
    cap: float = 300.0

    def delay(self, attempts: int) -> float:
        """The delay after `attempts` (>= 1) failed looks."""
        return float(min(self.cap, self.first * 2 ** min(attempts - 1, 32)))


@dataclasses.dataclass
class _Taken:
    body: Mapping[str, Any]
    attempts: int
    next_look: datetime.datetime


class TakenNames:
    """Per bridge: the child names found taken, what was read under them, and when to read again."""

    def __init__(self, backoff: Backoff) -> None:
        self.backoff = backoff
        self._guard = threading.Lock()
        self._taken: dict[Key, dict[str, _Taken]] = {}

    def found(self, key: Key, name: str, body: Mapping[str, Any], now: datetime.datetime) -> None:
        """A create of `name` failed because `body` holds the name."""
        with self._guard:
            self._taken.setdefault(key, {})[name] = _Taken(body, 1, self._after(1, now))

    def observed(
        self,
        key: Key,
        listed: Collection[str],
        read: Callable[[str], Mapping[str, Any] | None],
        now: datetime.datetime,
    ) -> list[Mapping[str, Any]]:
        """The objects under taken names not `listed` by label: read again when their step is due."""
        with self._guard:
            entries = dict(self._taken.get(key) or {})
        result = []
        for name, entry in entries.items():
            if name in listed:
                self._forget(key, name)  # labelled again (adopted, or fixed by hand)
                continue
            if now >= entry.next_look:
                body = read(name)
                if body is None:
                    self._forget(key, name)  # gone: the name is free again
                    continue
                entry = _Taken(body, entry.attempts + 1, self._after(entry.attempts + 1, now))
                with self._guard:
                    self._taken.setdefault(key, {})[name] = entry
            result.append(entry.body)
        return result

    def next_look(self, key: Key) -> datetime.datetime | None:
        with self._guard:
            looks = [entry.next_look for entry in (self._taken.get(key) or {}).values()]
        return min(looks) if looks else None

    def forget_bridge(self, key: Key) -> None:
        with self._guard:
            self._taken.pop(key, None)

    def _forget(self, key: Key, name: str) -> None:
        with self._guard:
            names = self._taken.get(key) or {}
            names.pop(name, None)
            if not names:
                self._taken.pop(key, None)

    def _after(self, attempts: int, now: datetime.datetime) -> datetime.datetime:
        return now + datetime.timedelta(seconds=self.backoff.delay(attempts))
