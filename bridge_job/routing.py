"""Routing: which route takes a JMS message (seed: ordered routes, first match wins, one topic each).

A route matches when every condition of its `match` holds: the destination name against `address`
(exact, or with ActiveMQ-style wildcards: `*` one dot-separated segment, `>` one or more trailing
segments), the destination type, and each listed header or property compared as text. Routes are tried
in (order, name) order; `JobConfig` keeps them sorted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from bridge_job.config import Direction, Route
from bridge_job.formats.native import render_value
from bridge_job.message import JmsMessage


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


def matches(route: Route, message: JmsMessage) -> bool:
    match = route.spec.match
    if match.destination_type is not None and match.destination_type != message.destination.kind.value:
        return False
    if match.address is not None and not address_matches(match.address, message.destination.name):
        return False
    for name, expected in match.headers.items():
        value = message.header(name)
        if value is None or render_value(value) != expected:
            return False
    return True


@dataclass(frozen=True, slots=True)
class RouteTable:
    """The jmsToKafka routes of a bridge, in the order they are tried."""

    routes: tuple[Route, ...]

    @classmethod
    def of(cls, routes: Sequence[Route]) -> RouteTable:
        return cls(tuple(r for r in routes if r.spec.direction is Direction.JMS_TO_KAFKA))

    def route(self, message: JmsMessage) -> Route | None:
        for route in self.routes:
            if matches(route, message):
                return route
        return None
