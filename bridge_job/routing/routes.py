"""Routing: which route takes a JMS message or a Kafka record (routes are ordered, the first match wins).

A route matches when every condition of its `match` holds: the destination name against `address`
(exact, or with ActiveMQ-style wildcards: `*` one dot-separated segment, `>` one or more trailing
segments), the destination type, and each listed header or property compared as text. Routes are tried
in (order, name) order; `JobConfig` keeps them sorted.

Routing reads a message through `Routable`: its destination and the text of a header or property (the
text the `native` format carries), so a journal entry is routed without decoding it whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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


Text = Callable[[str], str | None]  # a header's or property's value by name, as text; None when not set


def conditions_hold(route: Route, name: str, kind: str | None, text: Text) -> bool:
    """Whether `route`'s match takes a message at address `name` of destination type `kind` (None for a
    Kafka record, where `destinationType` does not apply) whose headers read as `text` says."""
    match = route.spec.match
    if kind is not None and match.destination_type is not None and match.destination_type != kind:
        return False
    if match.address is not None and not address_matches(match.address, name):
        return False
    return all(text(header) == expected for header, expected in match.headers.items())


def matches(route: Route, message: Routable) -> bool:
    destination = message.destination
    return conditions_hold(route, destination.name, destination.kind.value, message.text)


@dataclass(frozen=True, slots=True)
class RouteTable:
    """The routes of a bridge in one direction, in the order they are tried: jmsToKafka routes take JMS
    messages (`route`), kafkaToJms routes take records of the Kafka topics they read (`route_record`)."""

    routes: tuple[Route, ...]
    direction: Direction = Direction.JMS_TO_KAFKA
    _by_topic: dict[str, tuple[Route, ...]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, routes: Sequence[Route], direction: Direction = Direction.JMS_TO_KAFKA) -> RouteTable:
        """The routes of `direction`; for JMS messages (jmsToKafka, the default), every route that takes
        them, those to NATS (jmsToNats) among them, in one (order, name) order."""
        if direction.takes_jms:
            return cls(tuple(r for r in routes if r.spec.direction.takes_jms), direction)
        return cls(tuple(r for r in routes if r.spec.direction is direction), direction)

    def route(self, message: Routable) -> Route | None:
        """The first route that takes a JMS message."""
        for route in self.routes:
            if matches(route, message):
                return route
        return None

    def routes_of(self, topic: str) -> tuple[Route, ...]:
        """The kafkaToJms routes whose `kafkaTopic` (a name or a pattern) takes `topic`, in order."""
        found = self._by_topic.get(topic)
        if found is None:
            found = self._by_topic[topic] = tuple(
                r for r in self.routes if address_matches(r.spec.topic, topic)
            )
        return found

    def route_record(self, topic: str, text: Text) -> Route | None:
        """The first kafkaToJms route that takes a record read from `topic` whose headers read as `text`."""
        for route in self.routes_of(topic):
            if conditions_hold(route, topic, None, text):
                return route
        return None
