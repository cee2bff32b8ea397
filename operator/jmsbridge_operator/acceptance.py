"""Validation: whether a bridge can run, which routes it takes, and why it refuses the others.

`validate` judges a bridge and its routes as the operator does before it renders anything, and returns
structured problems: the reconciler writes them into the statuses (through `planning.plan`), and
`jmsbridge validate` prints them with their file and field. Nothing here does I/O.

A `JmsBridgeRoute` is in effect when its own spec is valid, its bridge exists and is valid, its match can
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
    JobConfig,
    SoftFailurePolicy,
    field_errors,
    job_config,
)
from jmsbridge_operator.conditions import INVALID_SPEC, Problem
from jmsbridge_operator.status import RouteVerdict

BRIDGE_NOT_FOUND = "BridgeNotFound"
BRIDGE_INVALID = "BridgeInvalid"
INVALID_MATCH = "InvalidMatch"
DUPLICATE_ORDER = "DuplicateOrder"


def field_problems(error: ValidationError) -> tuple[Problem, ...]:
    """An `InvalidSpec` problem for each field of a pydantic error: `<field path>: <message>`."""
    return tuple(Problem(INVALID_SPEC, path, f"{path}: {message}") for path, message in field_errors(error))


def route_problems(body: Mapping[str, Any]) -> tuple[Problem, ...]:
    """The problems of a route's own spec (none: it is a valid JmsBridgeRoute)."""
    try:
        JmsBridgeRoute.model_validate(body)
    except ValidationError as error:
        return field_problems(error)
    return ()


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
    parsed: list[tuple[Mapping[str, Any], JmsBridgeRoute]] = []
    for body in bodies:
        name = route_name(body)
        try:
            parsed.append((body, JmsBridgeRoute.model_validate(body)))
        except ValidationError as error:
            verdicts[name] = RouteVerdict(name, bridge_name, problems=field_problems(error))
    if bridge is None:
        where = f" in namespace {namespace}" if namespace else ""
        for _, route in parsed:
            name = route.metadata.name
            if bridge_invalid:
                message = f"JmsBridge {bridge_name} has an invalid spec; see its status"
                problem = Problem(BRIDGE_INVALID, "spec.bridgeRef.name", message)
                verdicts[name] = RouteVerdict(name, bridge_name, problems=(problem,), stalls=False)
            else:
                message = f"JmsBridge {bridge_name} not found{where}; create it or fix spec.bridgeRef.name"
                problem = Problem(BRIDGE_NOT_FOUND, "spec.bridgeRef.name", message)
                verdicts[name] = RouteVerdict(name, bridge_name, problems=(problem,))
        return Judgement([], verdicts)

    routes = [route for _, route in parsed]
    candidates: list[tuple[Mapping[str, Any], JmsBridgeRoute]] = []
    dead_letter_topic = bridge.spec.routing.dead_letter_topic
    for body, route in parsed:
        name = route.metadata.name
        if mismatch := _match_problem(route, bridge, routes):
            problem = Problem(INVALID_MATCH, "spec.match", mismatch)
            verdicts[name] = RouteVerdict(name, bridge_name, problems=(problem,))
        elif route.spec.on_soft_failure is SoftFailurePolicy.DEAD_LETTER and dead_letter_topic is None:
            message = "onSoftFailure deadLetter needs the bridge's spec.routing.deadLetterTopic"
            problem = Problem(INVALID_SPEC, "spec.onSoftFailure", message)
            verdicts[name] = RouteVerdict(name, bridge_name, problems=(problem,))
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
            taken = Problem(DUPLICATE_ORDER, "spec.order", message)
            verdicts[name] = RouteVerdict(name, bridge_name, problems=(taken,))
            continue
        holders[slot] = name
        accepted.append(route)

    accepted.sort(key=lambda r: (r.spec.order, r.metadata.name))
    for position, route in enumerate(accepted, start=1):
        verdicts[route.metadata.name] = RouteVerdict(route.metadata.name, bridge_name, position)
    return Judgement(accepted, verdicts)


# ---------------------------------------------------------------------------------------------------
# A bridge and its routes


@dataclasses.dataclass(frozen=True)
class Validation:
    """A bridge and its routes, judged. `config` is None when the bridge cannot run; `problems` say why."""

    bridge: JmsBridge | None  # None when its own spec is invalid
    config: JobConfig | None  # the job's config, with the routes in effect
    problems: tuple[Problem, ...]  # the bridge's own
    routes: Judgement


def _bridge_problems(bridge: JmsBridge) -> tuple[Problem, ...]:
    """The rules of a bridge's spec that its schema cannot say."""
    routing = bridge.spec.routing
    if routing.on_soft_failure is SoftFailurePolicy.DEAD_LETTER and routing.dead_letter_topic is None:
        field = "spec.routing.onSoftFailure"
        return (Problem(INVALID_SPEC, field, f"{field}: deadLetter needs spec.routing.deadLetterTopic"),)
    return ()


def validate(
    body: Mapping[str, Any], route_bodies: Sequence[Mapping[str, Any]], *, namespace: str | None = None
) -> Validation:
    """Judge a JmsBridge body and the bodies of the routes that reference it."""
    name = str((body.get("metadata") or {}).get("name"))
    try:
        bridge = JmsBridge.model_validate(body)
    except ValidationError as error:
        invalid = judge_routes(name, None, route_bodies, bridge_invalid=True, namespace=namespace)
        return Validation(None, None, field_problems(error), invalid)
    if problems := _bridge_problems(bridge):
        invalid = judge_routes(name, None, route_bodies, bridge_invalid=True, namespace=namespace)
        return Validation(None, None, problems, invalid)
    judgement = judge_routes(name, bridge, route_bodies, namespace=namespace)
    try:
        config = job_config(bridge, judgement.accepted)
    except ValidationError as error:
        return Validation(bridge, None, field_problems(error), judgement)
    return Validation(bridge, config, (), judgement)
