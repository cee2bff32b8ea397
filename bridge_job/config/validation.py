"""The rules of a bridge and its routes beyond their schema: one judgement for the job and the operator.

The operator (`jmsbridge_operator.acceptance`, which `jmsbridge validate` and `render` use too) and the job
(`bridge_job.config.loading`) judge with `judge` and `bridge_faults`, so a route the operator refuses is never
run by `jmsbridge job` from the same files. The operator keeps a bridge running without its refused routes and
says why in their statuses; the job and the command line refuse the whole configuration instead.

Match addresses use ActiveMQ-style wildcards: `*` stands for one dot-separated segment, `>` for the rest.
Here `>` also matches nothing, which errs on the side of accepting a route.

Credentials come only from Secrets: a secret-looking key (`bridge_job.redaction.is_secret_key`) in the
connection factory's properties, the JNDI environment or the Kafka properties, and a password inside a
URL, are refused, unless `spec.security.allowInlineCredentials` downgrades them to warnings (`Fault.warning`;
`refusals` and `warnings` tell them apart). `sasl.password` in the Kafka properties is refused either way:
it would never be used. Nothing here does I/O.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from bridge_job.config import (
    Direction,
    JmsBridgeSpec,
    Route,
    SoftFailurePolicy,
)
from bridge_job.redaction import is_secret_key, url_secrets

INVALID_SPEC = "InvalidSpec"
INVALID_MATCH = "InvalidMatch"
DUPLICATE_ORDER = "DuplicateOrder"
CREDENTIALS_IN_SPEC = "CredentialsInSpec"

JMS_SECRET_HINT = "put credentials in the Secret named by spec.jms.credentialsSecretRef"
KAFKA_SECRET_HINT = "put credentials in the Secret named by spec.kafka.sasl.credentialsSecretRef"
SWITCH = "spec.security.allowInlineCredentials"
ALLOWED = f"allowed by {SWITCH}: stored in plain text in the job's ConfigMap"
# The spec's `kafka.sasl` sets it over whatever the properties say, and without `sasl` nothing uses it.
IGNORED_KAFKA_PASSWORD = "spec.kafka.properties.sasl.password"


@dataclasses.dataclass(frozen=True)
class Fault:
    """One rule broken: a one-word reason, the field it is about, and what to fix. A warning is a rule
    the spec chose to waive: said, but no reason to refuse the bridge."""

    reason: str
    field: str
    message: str
    warning: bool = False


def fault_line(reason: str, message: str) -> str:
    """How a command prints a fault: a field problem names its field, the others say their reason first."""
    return message if reason == INVALID_SPEC else f"{reason}: {message}"


# ---------------------------------------------------------------------------------------------------
# Address patterns


def address_problem(pattern: str, field: str = "match.address") -> str | None:
    """Why a match address (or another `field` with wildcards) is not a usable pattern, or None."""
    segments = pattern.split(".")
    for index, segment in enumerate(segments):
        if segment in ("*", ">"):
            if segment == ">" and index != len(segments) - 1:
                return f"{field} {pattern!r}: `>` must be the last segment"
            continue
        if "*" in segment or ">" in segment:
            return f"{field} {pattern!r}: `*` and `>` stand for whole dot-separated segments"
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
# Routes


def _match_problem(route: Route, bridge: JmsBridgeSpec, routes: Sequence[Route]) -> str | None:
    match = route.spec.match
    if match.address is not None and (problem := address_problem(match.address)):
        return problem
    if route.spec.direction.takes_jms:
        sources = [(("queue" if s.queue is not None else "topic"), s.address) for s in bridge.jms.sources]
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
        return "match.destinationType applies to jmsToKafka and jmsToNats routes only"
    if match.address is not None:
        topics = sorted({r.spec.topic for r in routes if r.spec.direction is Direction.KAFKA_TO_JMS})
        if not any(addresses_overlap(match.address, topic) for topic in topics):
            return (
                f"match.address {match.address!r} matches none of the bridge's kafkaToJms source topics "
                f"({', '.join(topics)})"
            )
    return None


def _route_faults(route: Route, bridge: JmsBridgeSpec, routes: Sequence[Route]) -> list[Fault]:
    """Every problem of a route (not just the first: a user fixes them all in one go)."""
    faults = []
    if route.spec.kafka_topic is not None and (
        problem := address_problem(route.spec.kafka_topic, "kafkaTopic")
    ):
        faults.append(Fault(INVALID_SPEC, "spec.kafkaTopic", problem))
    if mismatch := _match_problem(route, bridge, routes):
        faults.append(Fault(INVALID_MATCH, "spec.match", mismatch))
    dead_letters = route.spec.on_soft_failure is SoftFailurePolicy.DEAD_LETTER
    if dead_letters and bridge.routing.dead_letter_topic is None:
        message = "onSoftFailure deadLetter needs the bridge's spec.routing.deadLetterTopic"
        faults.append(Fault(INVALID_SPEC, "spec.onSoftFailure", message))
    if route.spec.reply is not None and bridge.jms.reply_queue is None:
        message = "reply needs the bridge's spec.jms.replyQueue, the queue JMS services answer on"
        faults.append(Fault(INVALID_SPEC, "spec.reply", message))
    if route.spec.direction.uses_nats and bridge.nats is None:
        direction = route.spec.direction.value
        message = f"direction {direction} needs the bridge's spec.nats, the NATS servers it talks to"
        faults.append(Fault(INVALID_SPEC, "spec.direction", message))
    return faults


@dataclasses.dataclass(frozen=True)
class RouteJudgement:
    accepted: list[Route]  # in the order given
    faults: dict[str, tuple[Fault, ...]]  # route name -> why it is refused (every problem)


def judge(bridge: JmsBridgeSpec, routes: Sequence[Route], bridge_name: str) -> RouteJudgement:
    """Which of a bridge's routes it can take. `routes` come oldest first: of two routes with one
    `(direction, order)`, the older keeps it (routes are tried in `(order, name)` order, and two with one
    order would make the outcome depend on their names, which nobody means)."""
    faults: dict[str, tuple[Fault, ...]] = {}
    holders: dict[tuple[Direction, int], str] = {}
    accepted: list[Route] = []
    for route in routes:
        found = _route_faults(route, bridge, routes)
        direction = route.spec.direction
        # jmsToKafka and jmsToNats routes are tried in one order (they take the same JMS messages)
        slot = (Direction.JMS_TO_KAFKA if direction.takes_jms else direction, route.spec.order)
        if slot in holders:
            message = (
                f"order {route.spec.order} is already taken by route {holders[slot]} "
                f"({route.spec.direction.value}) of bridge {bridge_name}; pick another order"
            )
            found.append(Fault(DUPLICATE_ORDER, "spec.order", message))
        if found:
            faults[route.name] = tuple(found)
            continue
        holders[slot] = route.name
        accepted.append(route)
    return RouteJudgement(accepted, faults)


# ---------------------------------------------------------------------------------------------------
# Bridges


def _credential_faults(
    settings: Mapping[str, object], field: str, hint: str, urls: Iterable[tuple[str, str]] = ()
) -> list[Fault]:
    """A secret-looking key of `settings`, and a password inside any other value or one of `urls`."""
    faults = []
    values = list(urls)
    for key, value in settings.items():
        where = f"{field}.{key}"
        if is_secret_key(key):
            faults.append(Fault(CREDENTIALS_IN_SPEC, where, f"{where}: a credential in the spec; {hint}"))
        elif isinstance(value, str):
            values.append((where, value))
    for where, url in values:
        if found := url_secrets(url):
            message = f"{where}: holds a password ({', '.join(found)}); remove it and {hint}"
            faults.append(Fault(CREDENTIALS_IN_SPEC, where, message))
    return faults


def _inline_credentials(bridge: JmsBridgeSpec) -> list[Fault]:
    faults: list[Fault] = []
    if (factory := bridge.jms.connection_factory) is not None:
        field = "spec.jms.connectionFactory.properties"
        faults += _credential_faults(factory.properties, field, JMS_SECRET_HINT)
    if (jndi := bridge.jms.jndi) is not None:
        urls = [("spec.jms.jndi.providerUrl", jndi.provider_url)]
        faults += _credential_faults(jndi.environment, "spec.jms.jndi.environment", JMS_SECRET_HINT, urls)
    urls = [("spec.kafka.bootstrapServers", bridge.kafka.bootstrap_servers)]
    faults += _credential_faults(bridge.kafka.properties, "spec.kafka.properties", KAFKA_SECRET_HINT, urls)
    if not bridge.security.allow_inline_credentials:
        return faults
    return [_waived(fault) for fault in faults]


def _waived(fault: Fault) -> Fault:
    if fault.field == IGNORED_KAFKA_PASSWORD:  # allowing it would accept a field that is never used
        return dataclasses.replace(fault, message=f"{fault.message} (never used, whatever {SWITCH} says)")
    return dataclasses.replace(fault, message=f"{fault.message} ({ALLOWED})", warning=True)


def bridge_faults(bridge: JmsBridgeSpec) -> tuple[Fault, ...]:
    """The rules of a bridge's spec that its schema cannot say; those it waives come as warnings."""
    faults: list[Fault] = []
    routing = bridge.routing
    if routing.on_soft_failure is SoftFailurePolicy.DEAD_LETTER and routing.dead_letter_topic is None:
        field = "spec.routing.onSoftFailure"
        faults.append(Fault(INVALID_SPEC, field, f"{field}: deadLetter needs spec.routing.deadLetterTopic"))
    return tuple(faults + _inline_credentials(bridge))


def refusals(faults: Iterable[Fault]) -> list[Fault]:
    """The faults that refuse a bridge (not its warnings)."""
    return [fault for fault in faults if not fault.warning]


def warnings(faults: Iterable[Fault]) -> list[Fault]:
    return [fault for fault in faults if fault.warning]


# ---------------------------------------------------------------------------------------------------
# Resources in files


def duplicates(names: Iterable[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
    """The `(kind, namespace, name)` given more than once: Kubernetes holds one object per such key, so
    files with two would apply as one (the last wins) and silently lose the other."""
    return {key for key, count in Counter(names).items() if count > 1}


def duplicate_message(kind: str, namespace: str, name: str) -> str:
    where = f" in namespace {namespace}" if namespace else ""
    return f"{kind} {name}{where} is defined more than once; give each a name of its own"
