"""Which routes a bridge takes, and why it refuses the others.

A `JmsBridgeRoute` is in effect when its bridge exists and is valid, its own spec is valid, its match can
take messages the bridge actually receives, and no older route of the same bridge and direction holds
its `order` (routes are tried in `(order, name)` order; two with one order would make the outcome depend
on their names, which nobody means). A refused route stays out of the job's config and says why in its
own status; the bridge keeps running with the others, so one bad route never stops a bridge.

Match addresses use ActiveMQ-style wildcards: `*` stands for one dot-separated segment, `>` for the rest.
Here `>` also matches nothing, which errs on the side of accepting a route.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from bridge_job.config import (
    Direction,
    JmsBridge,
    JmsBridgeRoute,
    SoftFailurePolicy,
)
from jmsbridge_operator.status import RouteVerdict


def field_problems(error: ValidationError, prefix: str = "") -> list[str]:
    """`<field path>: <message>` for each problem of a pydantic error, paths dotted from `prefix`."""
    problems = []
    for item in error.errors():
        path = ".".join([prefix, *(str(p) for p in item["loc"])] if prefix else [str(p) for p in item["loc"]])
        message = item["msg"].removeprefix("Value error, ")
        problems.append(f"{path or '(document)'}: {message}")
    return problems


# ---------------------------------------------------------------------------------------------------
# Address patterns


def address_problem(pattern: str) -> str | None:
    """Why a match address is not a usable pattern, or None."""
    segments = pattern.split(".")
    for index, segment in enumerate(segments):
        if segment in ("*", ">"):
            if segment == ">" and index != len(segments) - 1:
                return f"match.address {pattern!r}: `>` must be the last segment"
            continue
        if "*" in segment or ">" in segment:
            return f"match.address {pattern!r}: `*` and `>` stand for whole dot-separated segments"
    return None


def _overlap(left: Sequence[str], right: Sequence[str]) -> bool:
    if (left and left[0] == ">") or (right and right[0] == ">"):
        return True
    if not left or not right:
        return not left and not right
    head_ok = left[0] == right[0] or "*" in (left[0], right[0])
    return head_ok and _overlap(left[1:], right[1:])


def addresses_overlap(pattern: str, other: str) -> bool:
    """Whether some destination name matches both (either may hold wildcards)."""
    return _overlap(pattern.split("."), other.split("."))


# ---------------------------------------------------------------------------------------------------
# Verdicts


@dataclasses.dataclass(frozen=True)
class Judgement:
    accepted: list[JmsBridgeRoute]
    verdicts: dict[str, RouteVerdict]

    @property
    def rejected(self) -> list[str]:
        return sorted(name for name, verdict in self.verdicts.items() if not verdict.accepted)


def route_name(body: Mapping[str, Any]) -> str:
    return str((body.get("metadata") or {}).get("name") or "")


def referenced_bridge(body: Mapping[str, Any]) -> str | None:
    """The bridge a route body references, read leniently (the body may be invalid)."""
    spec = body.get("spec")
    ref = spec.get("bridgeRef") if isinstance(spec, Mapping) else None
    name = ref.get("name") if isinstance(ref, Mapping) else None
    return name if isinstance(name, str) and name else None


def _age_key(body: Mapping[str, Any]) -> tuple[str, str]:
    # RFC 3339 timestamps in UTC sort as text; bodies without one (offline files) sort by name only.
    return (str((body.get("metadata") or {}).get("creationTimestamp") or ""), route_name(body))


def _match_problem(route: JmsBridgeRoute, bridge: JmsBridge, routes: Sequence[JmsBridgeRoute]) -> str | None:
    match = route.spec.match
    if match.address is not None and (problem := address_problem(match.address)):
        return problem
    if route.spec.direction is Direction.JMS_TO_KAFKA:
        sources = [
            (("queue" if s.queue is not None else "topic"), s.address) for s in bridge.spec.jms.sources
        ]
        if match.destination_type is not None:
            sources = [s for s in sources if s[0] == match.destination_type]
            if not sources:
                kind = match.destination_type
                return f"match.destinationType {kind}: the bridge consumes no {kind}"
        if match.address is not None and not any(addresses_overlap(match.address, a) for _, a in sources):
            listed = ", ".join(f"{kind} {address}" for kind, address in sources)
            return f"match.address {match.address!r} matches none of the bridge's sources ({listed})"
        return None
    if match.destination_type is not None:
        return "match.destinationType applies to jmsToKafka routes only"
    if match.address is not None:
        topics = sorted({r.spec.kafka_topic for r in routes if r.spec.direction is Direction.KAFKA_TO_JMS})
        if not any(addresses_overlap(match.address, topic) for topic in topics):
            return (
                f"match.address {match.address!r} matches none of the bridge's kafkaToJms source topics "
                f"({', '.join(topics)})"
            )
    return None


def judge_routes(
    bridge_name: str,
    bridge: JmsBridge | None,
    bodies: Sequence[Mapping[str, Any]],
    *,
    bridge_invalid: bool = False,
    namespace: str | None = None,
) -> Judgement:
    """Verdicts for the routes (`bodies`) that reference `bridge_name`; `bridge` None means not found."""
    verdicts: dict[str, RouteVerdict] = {}
    where = f" in namespace {namespace}" if namespace else ""
    if bridge is None:
        for body in bodies:
            name = route_name(body)
            if bridge_invalid:
                message = f"JmsBridge {bridge_name} has an invalid spec; see its status"
                verdicts[name] = RouteVerdict(
                    name, False, "BridgeInvalid", message, bridge_name, stalls=False
                )
            else:
                message = f"JmsBridge {bridge_name} not found{where}; create it or fix spec.bridgeRef.name"
                verdicts[name] = RouteVerdict(name, False, "BridgeNotFound", message, bridge_name)
        return Judgement([], verdicts)

    parsed: list[tuple[Mapping[str, Any], JmsBridgeRoute]] = []
    for body in bodies:
        name = route_name(body)
        try:
            parsed.append((body, JmsBridgeRoute.model_validate(body)))
        except ValidationError as error:
            message = "; ".join(field_problems(error))
            verdicts[name] = RouteVerdict(name, False, "InvalidSpec", message, bridge_name)
    routes = [route for _, route in parsed]

    candidates: list[tuple[Mapping[str, Any], JmsBridgeRoute]] = []
    dead_letter_topic = bridge.spec.routing.dead_letter_topic
    for body, route in parsed:
        name = route.metadata.name
        if problem := _match_problem(route, bridge, routes):
            verdicts[name] = RouteVerdict(name, False, "InvalidMatch", problem, bridge_name)
        elif route.spec.on_soft_failure is SoftFailurePolicy.DEAD_LETTER and dead_letter_topic is None:
            message = "onSoftFailure deadLetter needs the bridge's spec.routing.deadLetterTopic"
            verdicts[name] = RouteVerdict(name, False, "InvalidSpec", message, bridge_name)
        else:
            candidates.append((body, route))

    holders: dict[tuple[Direction, int], str] = {}
    accepted: list[JmsBridgeRoute] = []
    for _body, route in sorted(candidates, key=lambda c: _age_key(c[0])):
        name = route.metadata.name
        slot = (route.spec.direction, route.spec.order)
        if slot in holders:
            message = (
                f"order {route.spec.order} is already taken by route {holders[slot]} "
                f"({route.spec.direction.value}) of bridge {bridge_name}; pick another order"
            )
            verdicts[name] = RouteVerdict(name, False, "DuplicateOrder", message, bridge_name)
            continue
        holders[slot] = name
        accepted.append(route)

    accepted.sort(key=lambda r: (r.spec.order, r.metadata.name))
    for position, route in enumerate(accepted, start=1):
        name = route.metadata.name
        message = f"In effect for bridge {bridge_name} at position {position}"
        verdicts[name] = RouteVerdict(name, True, "Accepted", message, bridge_name, position)
    return Judgement(accepted, verdicts)
