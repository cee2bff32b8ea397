"""Routing: which route takes a JMS message (routes are ordered, the first match wins, one topic each).

A route matches when every condition of its `match` holds: the destination name against `address`
(exact, or with ActiveMQ-style wildcards: `*` one dot-separated segment, `>` one or more trailing
segments), the destination type, and each listed header or property compared as text. Routes are tried
in (order, name) order; `JobConfig` keeps them sorted.

Routing reads a message through `Routable`: its destination and the text of a header or property (the
text the `native` format carries), so a journal entry is routed without decoding it whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from bridge_job.config import Direction, Route
from bridge_job.message import Destination


class Routable(Protocol):
    @property
    def destination(self) -> Destination: ...

    def text(self, name: str) -> str | None:
        """A JMS header or property value by its JMS name, as text; None when not set."""


@lru_cache(maxsize=1024)
def address_pattern(address: str) -> re.Pattern[str]:
    """A regex for an address with wildcards; the name's other characters match literally."""
    parts = []
    for index, segment in enumerate(address.split(".")):
        dot = r"\." if index else ""
        if segment == "*":
            parts.append(dot + r"[^.]+")
        elif segment == ">":
            parts.append(dot + r".+")
        else:
            parts.append(dot + re.escape(segment))
    return re.compile("".join(parts))


def address_matches(address: str, name: str) -> bool:
    if "*" not in address and ">" not in address:
        return address == name
    return address_pattern(address).fullmatch(name) is not None


def matches(route: Route, message: Routable) -> bool:
    match = route.spec.match
    if match.destination_type is not None and match.destination_type != message.destination.kind.value:
        return False
    if match.address is not None and not address_matches(match.address, message.destination.name):
        return False
    return all(message.text(name) == expected for name, expected in match.headers.items())


@dataclass(frozen=True, slots=True)
class RouteTable:
    """The jmsToKafka routes of a bridge, in the order they are tried."""

    routes: tuple[Route, ...]

    @classmethod
    def of(cls, routes: Sequence[Route]) -> RouteTable:
        return cls(tuple(r for r in routes if r.spec.direction is Direction.JMS_TO_KAFKA))

    def route(self, message: Routable) -> Route | None:
        for route in self.routes:
            if matches(route, message):
                return route
        return None
