"""Kafka pre-flight and drift checks: what a bridge needs from Kafka, and whether the broker grants it.

This module decides; it does no I/O. `required_access` reads a `JobConfig` and says which topics the
bridge writes and reads (and which operations it needs on each), which consumer group and which
transactional ids it uses, and whether the operator should create its journal topic. `evaluate` takes
that and a `ProbeResult` (what the broker answered, gathered by `probe` or written by a test) and
computes a `CheckResult`: the problems with their one-word reasons, informational notes, one summarised
`KafkaReady` condition, and the state to carry into the next check.

Why the broker's answers and not our own ACL evaluation: Kafka returns, for the calling principal, the
operations it may perform on a topic, a group or the cluster (KIP-430, `include_authorized_operations`).
Evaluating ACLs ourselves would mean re-implementing prefixed and wildcard patterns, DENY precedence,
super users and custom authorizers, and would be wrong whenever our copy drifts from the broker's. The
only interpretation done here is the set of implications Kafka documents (READ, WRITE, DELETE or ALTER
imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL implies everything), so that an answer
which lists only WRITE still counts as allowing DESCRIBE.

An answer can be missing: a broker that does not report authorized operations (older brokers), a
consumer group that does not exist yet, a transactional-id probe that timed out. Missing is never a
failure: with no authorizer everything is allowed anyway; with an authorizer (or when we cannot
tell) the result carries a note saying what was not verified.

A refused login or TLS handshake (`ProbeResult.refusal`) is a hard failure at once: no wait mends a
wrong password or certificate.

Unreachable is different from denied: a cluster that does not answer may come back, so the check is
transient (`Reconciling`) until `grace_seconds` have passed since the first failed check, and a hard
failure after that. `grace_expired` is that rule as a pure function of time.

Names the bridge uses on the cluster (the job must use the same ones; see docs/kafka-checks.md):

- consumer groups start with `<bridgeId>.jms-bridge.`: `<bridgeId>.jms-bridge.journal-reader` (the
  journal reader, always) and `<bridgeId>.jms-bridge.ingress` (with kafkaToJms routes);
- transactional ids start with `<bridgeId>.jms-bridge.`: `<bridgeId>.jms-bridge.journal-<partition>` (the
  ingest's journal producers, always; `<bridgeId>.jms-bridge.journal`, of builds before, is fenced) and
  `<bridgeId>.jms-bridge.egress-<partition>` (delivery exactlyOnce); the suffix `preflight` is reserved
  for the operator's probe.

A bridge id cannot contain a dot, so one prefixed ACL per bridge never covers another bridge's names
(`orders.jms-bridge.` is not a prefix of anything of the bridge `orders-eu`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from bridge_job.config import (
    Direction,
    JobConfig,
    ingress_group,
    is_topic_pattern,
    journal_reader_group,
    transactional_id_prefix,
)
from bridge_job.contract import JournalTopicSpec, journal_topic, pending_topic, registrations
from jmsbridge_operator import condition_catalogue as catalogue
from jmsbridge_operator.conditions import Condition, Problem, join

PROBE_TRANSACTIONAL_ID_SUFFIX = "preflight"


class Reason(enum.StrEnum):
    """The one-word reasons a check reports, in the order a summary picks them (most basic first)."""

    INVALID_SPEC = catalogue.INVALID_SPEC
    # A refused login or handshake: the probe's bridge_job.kafka.refusals.RefusalKind.
    KAFKA_AUTHENTICATION_FAILED = catalogue.KAFKA_AUTHENTICATION_FAILED
    KAFKA_TLS_FAILED = catalogue.KAFKA_TLS_FAILED
    KAFKA_UNREACHABLE = catalogue.KAFKA_UNREACHABLE
    TOPIC_NOT_FOUND = catalogue.TOPIC_NOT_FOUND
    TOPIC_AUTHORIZATION_FAILED = catalogue.TOPIC_AUTHORIZATION_FAILED
    GROUP_AUTHORIZATION_FAILED = catalogue.GROUP_AUTHORIZATION_FAILED
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = catalogue.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    # The schema registry of routes of format avro or jsonSchema: the check registers their schemas.
    SCHEMA_REGISTRY_REFUSED = catalogue.SCHEMA_REGISTRY_REFUSED
    SCHEMA_INCOMPATIBLE = catalogue.SCHEMA_INCOMPATIBLE
    SCHEMA_REGISTRY_UNREACHABLE = catalogue.SCHEMA_REGISTRY_UNREACHABLE
    VERIFIED = catalogue.VERIFIED


class Operation(enum.StrEnum):
    """Kafka ACL operations, named and ordered as Kafka names and numbers them."""

    READ = "READ"
    WRITE = "WRITE"
    CREATE = "CREATE"
    DELETE = "DELETE"
    ALTER = "ALTER"
    DESCRIBE = "DESCRIBE"
    CLUSTER_ACTION = "CLUSTER_ACTION"
    DESCRIBE_CONFIGS = "DESCRIBE_CONFIGS"
    ALTER_CONFIGS = "ALTER_CONFIGS"
    IDEMPOTENT_WRITE = "IDEMPOTENT_WRITE"
    ALL = "ALL"


WRITE_ACCESS = frozenset({Operation.WRITE, Operation.DESCRIBE})
READ_ACCESS = frozenset({Operation.READ, Operation.DESCRIBE})
GROUP_ACCESS = frozenset({Operation.READ})
# What Kafka reports on the cluster resource when nothing is denied (an authorizer that denies none of
# these, or no authorizer at all).
CLUSTER_OPERATIONS = frozenset(
    {
        Operation.CREATE,
        Operation.ALTER,
        Operation.DESCRIBE,
        Operation.CLUSTER_ACTION,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE,
    }
)
_IMPLY_DESCRIBE = frozenset({Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER})
_ORDER: dict[str, int] = {operation.value: index for index, operation in enumerate(Operation)}


def granted(operations: Iterable[Operation]) -> frozenset[Operation]:
    """The operations an authorized-operations answer allows, with Kafka's implications spelled out."""
    allowed = set(operations)
    if Operation.ALL in allowed:
        return frozenset(Operation)
    if allowed & _IMPLY_DESCRIBE:
        allowed.add(Operation.DESCRIBE)
    if Operation.ALTER_CONFIGS in allowed:
        allowed.add(Operation.DESCRIBE_CONFIGS)
    return frozenset(allowed)


def operation_list(operations: Iterable[Operation]) -> str:
    """`WRITE, DESCRIBE`: in Kafka's order, so that messages do not change from check to check."""
    return ", ".join(sorted(set(operations), key=lambda operation: _ORDER[operation]))


# ---------------------------------------------------------------------------------------------------
# What a bridge needs


def probe_transactional_id(bridge_id: str) -> str:
    return transactional_id_prefix(bridge_id) + PROBE_TRANSACTIONAL_ID_SUFFIX


@dataclass(frozen=True)
class TopicUse:
    """One topic the bridge touches, the operations it needs there, and why (for messages)."""

    name: str
    operations: frozenset[Operation]
    purposes: tuple[str, ...]


@dataclass(frozen=True)
class JournalCreation:
    """The spec asks the operator to create the journal topic when it is missing."""

    name: str
    partitions: int


@dataclass(frozen=True)
class RequiredAccess:
    """Everything a bridge needs from its Kafka cluster, derived from its `JobConfig`."""

    bridge_id: str
    bootstrap_servers: str
    topics: tuple[TopicUse, ...]
    consumer_groups: tuple[str, ...]
    transactional_id_prefix: str | None
    journal_creation: JournalCreation | None
    pending_creation: str | None = None  # the pending-request topic, to create when it is missing
    registry_url: str | None = None  # spec.kafka.schemaRegistry.url, when `registrations` need it
    registrations: tuple[tuple[str, str, str], ...] = ()  # (subject, schema, type) to register

    @property
    def probe_transactional_id(self) -> str | None:
        if self.transactional_id_prefix is None:
            return None
        return self.transactional_id_prefix + PROBE_TRANSACTIONAL_ID_SUFFIX


def required_access(config: JobConfig) -> RequiredAccess:
    """The topics (with operations and purposes), groups and transactional ids this bridge uses.

    Writes: every `jmsToKafka` route's topic, the dead-letter topic, reply topics, the journal, the pending
    requests of `messageId` routes. Reads: every `kafkaToJms` route's topic, the journal, the pending
    requests. Topics are listed by name; purposes in config order.
    """
    operations: dict[str, set[Operation]] = {}
    purposes: dict[str, list[str]] = {}

    def use(topic: str, needed: frozenset[Operation], purpose: str) -> None:
        operations.setdefault(topic, set()).update(needed)
        if purpose not in purposes.setdefault(topic, []):
            purposes[topic].append(purpose)

    for route in config.routes_for(Direction.JMS_TO_KAFKA):
        use(route.spec.topic, WRITE_ACCESS, f"destination of route {route.name}")
    if config.bridge.routing.dead_letter_topic is not None:
        use(config.bridge.routing.dead_letter_topic, WRITE_ACCESS, "dead-letter topic")
    use(config.journal_topic, WRITE_ACCESS | READ_ACCESS, "journal")
    for route in config.routes_for(Direction.KAFKA_TO_JMS):
        if not is_topic_pattern(route.spec.topic):  # a pattern's topics are the job's to find
            use(route.spec.topic, READ_ACCESS, f"source of route {route.name}")
    for topic, route_name in config.reply_topics.items():
        use(topic, WRITE_ACCESS, f"reply topic of route {route_name}")
    if config.keeps_pending_requests:
        use(config.pending_topic, WRITE_ACCESS | READ_ACCESS, "pending requests")

    kafka = config.bridge.kafka
    return RequiredAccess(
        bridge_id=config.bridge_id,
        bootstrap_servers=kafka.bootstrap_servers,
        topics=tuple(
            TopicUse(name, frozenset(operations[name]), tuple(purposes[name])) for name in sorted(operations)
        ),
        consumer_groups=(journal_reader_group(config.bridge_id),)
        + ((ingress_group(config.bridge_id),) if config.routes_for(Direction.KAFKA_TO_JMS) else ()),
        # Always: the journal is written in transactions (bridge_job/journal/writer.py).
        transactional_id_prefix=transactional_id_prefix(config.bridge_id),
        journal_creation=(
            JournalCreation(config.journal_topic, kafka.journal_partitions)
            if kafka.create_journal_topic
            else None
        ),
        pending_creation=(
            config.pending_topic if kafka.create_journal_topic and config.keeps_pending_requests else None
        ),
        registry_url=None if kafka.schema_registry is None else kafka.schema_registry.url,
        registrations=registrations(config),
    )


def journal_topic_spec(creation: JournalCreation, broker_count: int) -> JournalTopicSpec:
    return journal_topic(creation.name, creation.partitions, broker_count)


def pending_topic_spec(name: str, broker_count: int) -> JournalTopicSpec:
    return pending_topic(name, broker_count)


# ---------------------------------------------------------------------------------------------------
# What the broker answered


class Lookup(enum.Enum):
    """How a describe call answered for one topic or group."""

    FOUND = "found"
    NOT_FOUND = "not found"
    DENIED = "describe denied"  # Kafka hides existence from a principal without DESCRIBE


class Authorizer(enum.Enum):
    ABSENT = "absent"
    PRESENT = "present"
    UNKNOWN = "unknown"


class AclAnswer(enum.Enum):
    """How the broker answered an ACL admin request (used only to tell whether it has an authorizer)."""

    SECURITY_DISABLED = "no authorizer is configured"
    ACCEPTED = "served by an authorizer"  # bindings listed, or a delete request accepted
    DENIED = "refused for lack of cluster permission"  # only an authorizer refuses
    INCONCLUSIVE = "no telling answer"  # an empty listing, an error, no answer


def detect_authorizer(
    acl_answers: Sequence[AclAnswer], cluster_operations: frozenset[Operation] | None
) -> Authorizer:
    """Whether the broker runs an authorizer, from ACL requests and the cluster's authorized operations.

    Without an authorizer Kafka answers every ACL request with SECURITY_DISABLED and reports every
    cluster operation as allowed; anything refused or listed means an authorizer is there.
    """
    for answer in acl_answers:
        if answer is AclAnswer.SECURITY_DISABLED:
            return Authorizer.ABSENT
        if answer in (AclAnswer.ACCEPTED, AclAnswer.DENIED):
            return Authorizer.PRESENT
    if cluster_operations is not None and not granted(cluster_operations) >= CLUSTER_OPERATIONS:
        return Authorizer.PRESENT
    return Authorizer.UNKNOWN


@dataclass(frozen=True)
class TopicAnswer:
    lookup: Lookup
    authorized_operations: frozenset[Operation] | None = None  # None: the broker did not say
    created: bool = False  # the probe created it (the journal) during this check
    creation_error: str | None = None
    creation_denied: bool = False


@dataclass(frozen=True)
class GroupAnswer:
    lookup: Lookup  # NOT_FOUND: no member has joined it yet
    authorized_operations: frozenset[Operation] | None = None


class Access(enum.Enum):
    ALLOWED = "allowed"
    DENIED = "denied"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class TransactionalIdAnswer:
    """How the broker answered a producer initialising the probe transactional id."""

    access: Access
    detail: str = ""  # the broker's error, when not allowed
    cluster_denied: bool = False  # refused for lack of IDEMPOTENT_WRITE on the cluster (brokers < 2.8)


@dataclass(frozen=True)
class RegistryAnswer:
    """What the schema registry answered to the registration of the bridge's schemas."""

    registered: int = 0
    unreachable: str | None = None  # no answer (or a 5xx): what the client said
    refused: tuple[Problem, ...] = ()  # SchemaRegistryRefused (the login, a role, TLS) or SchemaIncompatible


@dataclass(frozen=True)
class ProbeResult:
    """What the cluster answered to one probe. `reachable=False`: no complete answer (see `detail`)."""

    reachable: bool
    detail: str = ""
    config_error: str | None = None  # the client settings themselves are unusable
    refused: tuple[str, str] | None = None  # the login or TLS refused (its reason), and what to fix
    authorizer: Authorizer = Authorizer.UNKNOWN
    topics: Mapping[str, TopicAnswer] = field(default_factory=dict)
    groups: Mapping[str, GroupAnswer] = field(default_factory=dict)
    transactional_id: TransactionalIdAnswer | None = None
    registry: RegistryAnswer | None = None  # None: not asked (no registrations, or Kafka failed first)

    @classmethod
    def unreachable(cls, detail: str) -> ProbeResult:
        return cls(reachable=False, detail=detail)

    @classmethod
    def invalid(cls, error: str) -> ProbeResult:
        return cls(reachable=False, config_error=error)

    @classmethod
    def refusal(cls, reason: str, message: str) -> ProbeResult:
        return cls(reachable=False, refused=(reason, message))


# ---------------------------------------------------------------------------------------------------
# What the check concludes


@dataclass(frozen=True)
class CheckSettings:
    interval_seconds: float = 60.0  # between checks of a healthy (or hard-failed) bridge
    grace_seconds: float = 300.0  # unreachable for this long: a hard failure
    retry_seconds: float = 5.0  # first retry after a failed probe; doubles up to the interval
    probe_deadline_seconds: float = 15.0  # the whole probe
    call_timeout_seconds: float = 5.0  # each request within it


@dataclass(frozen=True)
class CheckState:
    """What the caller keeps from one check to the next (a fresh bridge starts with `CheckState()`).

    Times are wall-clock seconds (`time.time()`), so the state may be persisted (in status, say) and
    survive an operator restart.
    """

    unreachable_since: float | None = None
    failures: int = 0  # consecutive probes without a complete answer


class Verdict(enum.StrEnum):
    READY = "Ready"  # run (or keep running) the bridge
    TRANSIENT = "Reconciling"  # unreachable within the grace period: change nothing, retry soon
    FAILED = "Stalled"  # a hard failure: stop the bridge until a check passes


@dataclass(frozen=True)
class CheckResult:
    verdict: Verdict
    condition: Condition
    problems: tuple[Problem, ...]
    notes: tuple[str, ...]
    state: CheckState  # hand this to the next check
    retry_after: float  # seconds until the next check should run

    @property
    def ready(self) -> bool:
        return self.verdict is Verdict.READY

    @property
    def reconciling(self) -> bool:
        return self.verdict is Verdict.TRANSIENT

    @property
    def stalled(self) -> bool:
        return self.verdict is Verdict.FAILED


def grace_expired(first_failure: float, now: float, grace: float) -> bool:
    """Whether a cluster unreachable since `first_failure` has been so for the whole grace period."""
    return now - first_failure >= grace


def evaluate(
    access: RequiredAccess,
    probe: ProbeResult,
    *,
    now: float,
    state: CheckState | None = None,
    settings: CheckSettings | None = None,
) -> CheckResult:
    """Judge one probe: ready, transient (unreachable within the grace period) or a hard failure."""
    state = state or CheckState()
    settings = settings or CheckSettings()
    if probe.config_error is not None:
        problem = Problem(
            Reason.INVALID_SPEC, "kafka", f"the Kafka client settings are unusable: {probe.config_error}"
        )
        return _failed([problem], [], settings)
    if probe.refused is not None:  # no wait mends a wrong password or certificate: a hard failure at once
        reason, message = probe.refused
        return _failed([Problem(Reason(reason), access.bootstrap_servers, message)], [], settings)
    if not probe.reachable:
        where = f"Kafka at {access.bootstrap_servers}"
        return _unreachable(where, Reason.KAFKA_UNREACHABLE, probe.detail, now, state, settings)

    problems: list[Problem] = []
    notes: list[str] = []
    if probe.authorizer is Authorizer.ABSENT:
        notes.append("no authorizer found: all operations allowed")
    for use in access.topics:
        _judge_topic(use, probe.topics.get(use.name), probe.authorizer, problems, notes)
    for group in access.consumer_groups:
        _judge_group(group, probe.groups.get(group), probe.authorizer, problems, notes)
    if access.transactional_id_prefix is not None:
        _judge_transactional_id(access, probe.transactional_id, problems, notes)
    registry = probe.registry if access.registrations else None
    if registry is not None:
        problems += registry.refused

    if problems:
        return _failed(problems, notes, settings)
    if access.registrations and (registry is None or registry.unreachable is not None):
        detail = "not asked" if registry is None else registry.unreachable or ""
        where = f"the schema registry at {access.registry_url}"
        return _unreachable(where, Reason.SCHEMA_REGISTRY_UNREACHABLE, detail, now, state, settings)
    return _verified(access, registry, notes, settings)


def _verified(
    access: RequiredAccess, registry: RegistryAnswer | None, notes: list[str], settings: CheckSettings
) -> CheckResult:
    verified = f"{len(access.topics)} topic{'s' if len(access.topics) != 1 else ''}"
    verified += f", consumer group{'s' if len(access.consumer_groups) != 1 else ''} "
    verified += ", ".join(access.consumer_groups)
    if access.transactional_id_prefix is not None:
        verified += f" and transactional ids {access.transactional_id_prefix}*"
    if registry is not None:
        verified += f"; registered {registry.registered} schemas at {access.registry_url}"
    message = join([f"checked {verified}", *notes])
    return CheckResult(
        verdict=Verdict.READY,
        condition=Condition(catalogue.KAFKA_READY, "True", Reason.VERIFIED.value, message),
        problems=(),
        notes=tuple(notes),
        state=CheckState(),
        retry_after=settings.interval_seconds,
    )


def _judge_topic(
    use: TopicUse,
    answer: TopicAnswer | None,
    authorizer: Authorizer,
    problems: list[Problem],
    notes: list[str],
) -> None:
    why = ", ".join(use.purposes)
    needed = operation_list(use.operations)
    if answer is None:
        notes.append(f"topic {use.name}: not verified, no answer ({why})")
    elif answer.lookup is Lookup.DENIED:
        # DESCRIBE is implied by every other operation: without it the principal has none of them.
        problems.append(
            Problem(
                Reason.TOPIC_AUTHORIZATION_FAILED, use.name, f"topic {use.name}: missing {needed} ({why})"
            )
        )
    elif answer.lookup is Lookup.NOT_FOUND:
        if answer.creation_denied:
            problems.append(
                Problem(
                    Reason.TOPIC_AUTHORIZATION_FAILED,
                    use.name,
                    f"topic {use.name}: does not exist and creating it was refused, missing CREATE ({why})",
                )
            )
        else:
            failed = f"; creating it failed: {answer.creation_error}" if answer.creation_error else ""
            problems.append(
                Problem(Reason.TOPIC_NOT_FOUND, use.name, f"topic {use.name}: does not exist ({why}){failed}")
            )
    else:
        if answer.created:
            notes.append(f"created topic {use.name} ({why})")
        if answer.authorized_operations is not None:
            missing = use.operations - granted(answer.authorized_operations)
            if missing:
                problems.append(
                    Problem(
                        Reason.TOPIC_AUTHORIZATION_FAILED,
                        use.name,
                        f"topic {use.name}: missing {operation_list(missing)} ({why})",
                    )
                )
        elif authorizer is not Authorizer.ABSENT:
            notes.append(
                f"topic {use.name}: {needed} not verified, the broker did not report authorized operations"
            )


def _judge_group(
    group: str, answer: GroupAnswer | None, authorizer: Authorizer, problems: list[Problem], notes: list[str]
) -> None:
    """READ on the bridge's group; a group nobody has joined yet is judged by the describe answer.

    Kafka evaluates group ACLs by name, so a broker can report operations for a group that does not
    exist yet. Where none come: the describe request itself needs DESCRIBE, which READ
    implies, so a refused describe proves READ missing; an accepted one without operations leaves READ
    unverified (a note), because the only requests that need READ (join, commit) would create the group.
    """
    needed = operation_list(GROUP_ACCESS)
    if answer is None:
        notes.append(f"consumer group {group}: not verified, no answer")
    elif answer.lookup is Lookup.DENIED:
        problems.append(
            Problem(Reason.GROUP_AUTHORIZATION_FAILED, group, f"consumer group {group}: missing {needed}")
        )
    elif answer.authorized_operations is not None:
        missing = GROUP_ACCESS - granted(answer.authorized_operations)
        if missing:
            problems.append(
                Problem(
                    Reason.GROUP_AUTHORIZATION_FAILED,
                    group,
                    f"consumer group {group}: missing {operation_list(missing)}",
                )
            )
    elif authorizer is not Authorizer.ABSENT:
        why = "it does not exist yet and " if answer.lookup is Lookup.NOT_FOUND else ""
        notes.append(
            f"consumer group {group}: {needed} not verified, {why}"
            "the broker did not report authorized operations"
        )


def _judge_transactional_id(
    access: RequiredAccess, answer: TransactionalIdAnswer | None, problems: list[Problem], notes: list[str]
) -> None:
    prefix = f"{access.transactional_id_prefix}*"
    if answer is None:
        notes.append(f"transactional ids {prefix}: not verified, no answer")
    elif answer.access is Access.DENIED:
        if answer.cluster_denied:
            message = (
                f"cluster: missing {Operation.IDEMPOTENT_WRITE}, which transactional ids {prefix} need on "
                f"brokers before Kafka 2.8 ({answer.detail})"
            )
        else:
            missing = operation_list([Operation.WRITE, Operation.DESCRIBE])
            message = (
                f"transactional ids {prefix}: missing {missing} "
                f"(initialising {access.probe_transactional_id} was refused: {answer.detail})"
            )
        problems.append(Problem(Reason.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, prefix, message))
    elif answer.access is Access.UNKNOWN:
        notes.append(f"transactional ids {prefix}: not verified, {answer.detail}")


def _failed(problems: Sequence[Problem], notes: Sequence[str], settings: CheckSettings) -> CheckResult:
    severity = {reason.value: index for index, reason in enumerate(Reason)}
    ordered = sorted(problems, key=lambda p: severity[p.reason])  # stable: subjects keep their order
    return CheckResult(
        verdict=Verdict.FAILED,
        condition=Condition(
            catalogue.KAFKA_READY,
            "False",
            str(ordered[0].reason),
            join([p.message for p in ordered] + list(notes)),
        ),
        problems=tuple(ordered),
        notes=tuple(notes),
        state=CheckState(),
        retry_after=settings.interval_seconds,
    )


def _unreachable(
    where: str, reason: Reason, detail: str, now: float, state: CheckState, settings: CheckSettings
) -> CheckResult:
    """`where` (Kafka, the schema registry) did not answer: transient within the grace period, then a hard
    failure with `reason`."""
    since = state.unreachable_since if state.unreachable_since is not None else now
    next_state = CheckState(unreachable_since=since, failures=state.failures + 1)
    waited = max(0.0, now - since)
    if grace_expired(since, now, settings.grace_seconds):
        problem = Problem(
            reason,
            where,
            f"{where} unreachable for {_seconds(waited)} (grace period {_seconds(settings.grace_seconds)}): "
            f"{detail}",
        )
        result = _failed([problem], [], settings)
        return CheckResult(
            result.verdict, result.condition, result.problems, (), next_state, settings.interval_seconds
        )
    remaining = settings.grace_seconds - waited
    message = (
        f"{where} did not answer: {detail}; retrying, a hard failure if it still does not answer "
        f"in {_seconds(remaining)}"
    )
    backoff = settings.retry_seconds * 2 ** min(state.failures, 16)
    return CheckResult(
        verdict=Verdict.TRANSIENT,
        condition=Condition(catalogue.KAFKA_READY, "Unknown", reason.value, join([message])),
        problems=(Problem(reason, where, message),),
        notes=(),
        state=next_state,
        # Never later than the end of the grace period, so that the hard failure is reported on time.
        retry_after=max(0.5, min(settings.interval_seconds, backoff, remaining)),
    )


def _seconds(value: float) -> str:
    return f"{value:.0f}s" if value >= 10 else f"{round(value, 1):g}s"
