"""Validation: whether a bridge can run, which routes it takes, and why it refuses the others.

`validate` judges a bridge and its routes as the operator does before it renders anything, and returns
structured problems: the reconciler writes them into the statuses (through `planning.plan`), and
`jmsbridge validate` prints them with their file and field. Nothing here does I/O.

A `JmsBridgeRoute` is in effect when its own spec is valid, its bridge exists and is valid, its match can
take messages the bridge actually receives, and no older route of the same bridge and direction holds
its `order` (routes are tried in `(order, name)` order; two with one order would make the outcome depend
on their names, which nobody means). A refused route stays out of the job's config and says why in its
own status; the bridge keeps running with the others, so one bad route never stops a bridge.

The rules themselves (match addresses, orders, dead letters, credentials) are
`bridge_job.config.validation`'s, which the job applies too; here they become problems and verdicts for
the statuses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from bridge_job.config import (
    JmsBridge,
    JmsBridgeRoute,
    JobConfig,
    Route,
    as_api_server,
    bridge_id_of,
    field_errors,
    job_config,
)
from bridge_job.config.validation import Fault, bridge_faults, judge, refusals, warnings
from jmsbridge_operator import naming
from jmsbridge_operator.bridge_ids import id_taken, ran_as
from jmsbridge_operator.checkpoint_reset import annotation_problems
from jmsbridge_operator.checkpoint_sharing import checkpoint_problems
from jmsbridge_operator.condition_catalogue import BRIDGE_INVALID, BRIDGE_NOT_FOUND, INVALID_SPEC
from jmsbridge_operator.conditions import Problem
from jmsbridge_operator.policy import DEFAULT_POLICY, Policy, policy_problems
from jmsbridge_operator.render import secret_names
from jmsbridge_operator.secret_marks import marked_for, not_marked
from jmsbridge_operator.status import RouteVerdict


def problem_of(fault: Fault) -> Problem:
    return Problem(fault.reason, fault.field, fault.message)


def field_problems(error: ValidationError) -> tuple[Problem, ...]:
    """An `InvalidSpec` problem for each field of a pydantic error: `<field path>: <message>`."""
    return tuple(Problem(INVALID_SPEC, path, f"{path}: {message}") for path, message in field_errors(error))


def route_problems(body: Mapping[str, Any]) -> tuple[Problem, ...]:
    """The problems of a route's own spec (none: it is a valid JmsBridgeRoute)."""
    try:
        as_api_server(JmsBridgeRoute, body)
    except ValidationError as error:
        return field_problems(error)
    return ()


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
            parsed.append((body, as_api_server(JmsBridgeRoute, body)))
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

    ordered = sorted(parsed, key=lambda p: _age_key(p[0]))
    judged = judge(bridge.spec, [Route(name=r.metadata.name, spec=r.spec) for _, r in ordered], bridge_name)
    for name, faults in judged.faults.items():
        verdicts[name] = RouteVerdict(name, bridge_name, problems=tuple(problem_of(f) for f in faults))
    in_effect = {route.name for route in judged.accepted}
    accepted = [route for _, route in ordered if route.metadata.name in in_effect]
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
    warnings: tuple[Problem, ...] = ()  # rules the spec waives (inline credentials): said, not refused
    unmarked: tuple[str, ...] = ()  # Secrets refused as not marked for the bridge: looked at again


def bridge_id_problems(body: Mapping[str, Any], bridge: JmsBridge) -> tuple[Problem, ...]:
    """A bridge id other than the one the bridge ran with (its status says which): the API server refuses
    that change (a CEL transition rule), unless its CRD predates the rule or it runs no CEL."""
    ran = ran_as(body)
    if not ran or ran == bridge_id_of(bridge, ran):
        return ()
    message = (
        f"spec.bridgeId: the bridge ran as {ran!r}, and its journal topic, consumer groups, transactional "
        f"ids and Lease are named after it; {bridge_id_of(bridge)!r} would be another bridge on the same JMS "
        f"destinations. Set spec.bridgeId back to {ran!r}, or create a new JmsBridge"
    )
    return (Problem(INVALID_SPEC, "spec.bridgeId", message),)


def unmarked_secrets(
    bridge: JmsBridge, config: JobConfig, marks: Mapping[str, frozenset[str]]
) -> tuple[str, ...]:
    """The Secrets the bridge's pods read that are known not to be marked for it."""
    name = bridge.metadata.name
    return tuple(
        secret
        for secret in secret_names(bridge, config)
        if secret != naming.bridge_key_secret(name)
        and secret in marks
        and not marked_for(marks[secret], name)
    )


def validate(
    body: Mapping[str, Any],
    route_bodies: Sequence[Mapping[str, Any]],
    *,
    namespace: str | None = None,
    policy: Policy = DEFAULT_POLICY,
    id_holder: str | None = None,
    secret_marks: Mapping[str, frozenset[str]] | None = None,
) -> Validation:
    """Judge a JmsBridge body and the bodies of the routes that reference it, within the platform team's
    `policy`; `id_holder` is the bridge that holds its id before it (bridge_ids.py), if any;
    `secret_marks` the bridges each Secret read so far is marked for (secret_marks.py)."""
    name = str((body.get("metadata") or {}).get("name"))
    try:
        bridge = as_api_server(JmsBridge, body)
    except ValidationError as error:
        invalid = judge_routes(name, None, route_bodies, bridge_invalid=True, namespace=namespace)
        return Validation(None, None, field_problems(error), invalid)
    found = bridge_faults(bridge.spec)
    faults = tuple(problem_of(fault) for fault in refusals(found))
    problems = faults + checkpoint_problems(bridge.spec) + annotation_problems(body)
    problems += bridge_id_problems(body, bridge) + policy_problems(bridge.spec, policy)
    if id_holder is not None:
        problems += (id_taken(body, id_holder),)
    if problems:
        invalid = judge_routes(name, None, route_bodies, bridge_invalid=True, namespace=namespace)
        return Validation(None, None, problems, invalid)
    judgement = judge_routes(name, bridge, route_bodies, namespace=namespace)
    try:
        config = job_config(bridge, judgement.accepted, ran_as(body))
    except ValidationError as error:
        return Validation(bridge, None, field_problems(error), judgement)
    if not policy.unmarked_secrets and (unmarked := unmarked_secrets(bridge, config, secret_marks or {})):
        said = tuple(
            Problem(INVALID_SPEC, "spec", not_marked(s, name, "read by the bridge's pods")) for s in unmarked
        )
        invalid = judge_routes(name, None, route_bodies, bridge_invalid=True, namespace=namespace)
        return Validation(None, None, said, invalid, unmarked=unmarked)
    return Validation(bridge, config, (), judgement, tuple(problem_of(fault) for fault in warnings(found)))
