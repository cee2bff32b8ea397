"""The Kafka checks' decisions, from broker answers the tests write themselves.

Answers Apache Kafka does not give on demand (no authorizer at all, authorized operations not reported,
an older broker's cluster refusal) are tested here with `ProbeResult`s the tests write; what Kafka's own
authorizer answers, with every ACL the bridge needs taken away in turn: `test_acls.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from jmsbridge_operator.conditions import MESSAGE_LIMIT
from jmsbridge_operator.kafka_checks import evaluation
from jmsbridge_operator.kafka_checks.evaluation import (
    Access,
    AclAnswer,
    Authorizer,
    CheckSettings,
    CheckState,
    GroupAnswer,
    JournalCreation,
    Lookup,
    Operation,
    ProbeResult,
    Reason,
    RequiredAccess,
    TopicAnswer,
    TransactionalIdAnswer,
    Verdict,
    detect_authorizer,
    evaluate,
    grace_expired,
    granted,
    journal_topic_spec,
    operation_list,
    required_access,
)

from bridge_job.config import JobConfig
from tests.operator.kafka_checks.bridges import bridge_config

R, W, D = Operation.READ, Operation.WRITE, Operation.DESCRIBE
NOW = 1_700_000_000.0
JOURNAL = "orders.jms-bridge.journal"
READER = "orders.jms-bridge.journal-reader"


def access(**kwargs: object) -> RequiredAccess:
    return required_access(bridge_config(**kwargs))  # type: ignore[arg-type]


def answers(
    needed: RequiredAccess,
    *,
    authorizer: Authorizer = Authorizer.PRESENT,
    topics: dict[str, TopicAnswer] | None = None,
    groups: dict[str, GroupAnswer] | None = None,
    transactional_id: TransactionalIdAnswer | None = None,
) -> ProbeResult:
    """A broker with an authorizer that allows everything the bridge needs, except what is overridden."""
    everything = frozenset({R, W, D})
    all_topics = {use.name: TopicAnswer(Lookup.FOUND, everything) for use in needed.topics}
    all_groups = {group: GroupAnswer(Lookup.FOUND, frozenset({R, D})) for group in needed.consumer_groups}
    return ProbeResult(
        reachable=True,
        authorizer=authorizer,
        topics=all_topics | (topics or {}),
        groups=all_groups | (groups or {}),
        transactional_id=transactional_id or TransactionalIdAnswer(Access.ALLOWED),
    )


# ---------------------------------------------------------------------------------------------------
# What a bridge needs


def test_required_access_lists_written_and_read_topics_with_their_purposes() -> None:
    needed = access(writes=("orders", "audit"), reads=("replies",), dead_letter="dlq")

    by_name = {use.name: use for use in needed.topics}
    assert list(by_name) == sorted(by_name)
    assert by_name["orders"].operations == {W, D}
    assert by_name["orders"].purposes == ("destination of route to-kafka-orders",)
    assert by_name["dlq"].operations == {W, D}
    assert by_name["dlq"].purposes == ("dead-letter topic",)
    assert by_name["replies"].operations == {R, D}
    assert by_name["replies"].purposes == ("source of route from-kafka-replies",)
    assert by_name[JOURNAL].operations == {R, W, D}
    assert needed.consumer_groups == (READER, "orders.jms-bridge.ingress")
    assert needed.journal_creation is None


def test_a_topic_used_twice_is_checked_once_with_every_purpose() -> None:
    needed = access(writes=("orders",), reads=("orders",), dead_letter="orders")

    (use,) = [u for u in needed.topics if u.name == "orders"]
    assert use.operations == {R, W, D}
    assert use.purposes == (
        "destination of route to-kafka-orders",
        "dead-letter topic",
        "source of route from-kafka-orders",
    )


@pytest.mark.parametrize("exactly_once", [False, True])
def test_every_bridge_needs_its_transactional_ids_for_the_journal(exactly_once: bool) -> None:
    needed = access(exactly_once=exactly_once)

    assert needed.transactional_id_prefix == "orders.jms-bridge."
    assert needed.probe_transactional_id == "orders.jms-bridge.preflight"
    assert needed.consumer_groups == (READER,)


def test_the_docs_acl_table_grants_the_transactional_ids_every_bridge_needs() -> None:
    """The row a user copies from docs/kafka-checks.md asks what the check requires of every bridge."""
    docs = Path(__file__).resolve().parents[3] / "docs" / "kafka-checks.md"
    (row,) = [line for line in docs.read_text().splitlines() if line.startswith("| TransactionalId |")]
    _, pattern, name, operations, when = [cell.strip() for cell in row.split("|")[1:-1]]
    assert (pattern, operations) == ("PREFIXED", "WRITE, DESCRIBE")
    assert name == f"`{access(exactly_once=False).transactional_id_prefix}`"  # an atLeastOnce bridge too
    assert when.startswith("always")


def test_journal_creation_only_when_the_spec_asks() -> None:
    assert access(journal="j", create_journal=True, journal_partitions=6).journal_creation == JournalCreation(
        "j", 6
    )
    assert access(journal="j").journal_creation is None


def test_message_id_requests_need_the_pending_topic_created_with_the_journal() -> None:
    needed = access(reads=("requests",), message_id_replies="answers", create_journal=True)
    (pending,) = [u for u in needed.topics if u.name == "orders.jms-bridge.pending"]
    assert pending.operations == {R, W, D} and pending.purposes == ("pending requests",)
    assert needed.pending_creation == "orders.jms-bridge.pending"
    assert access(reads=("requests",), message_id_replies="answers").pending_creation is None
    assert "orders.jms-bridge.pending" not in {u.name for u in access(reads=("requests",)).topics}


def test_nats_routes_need_no_topic_or_group_beyond_the_dead_letter_topic() -> None:
    """A natsToJms route has no kafkaTopic: its soft failures go to the dead-letter topic, nothing else."""
    data = bridge_config(writes=("orders",), dead_letter="dlq").dump()
    data["bridge"]["nats"] = {"servers": ["nats://127.0.0.1:4222"]}
    nats_routes = [
        {
            "name": name,
            "spec": {
                "bridgeRef": {"name": "orders"},
                "direction": "natsToJms",
                "natsSubject": subject,
                "jmsDestination": {"queue": "orders.requests"},
            },
        }
        for name, subject in (("from-nats-events", "events.>"), ("from-nats-orders", "svc.orders.>"))
    ]
    data["routes"] = sorted([*data["routes"], *nats_routes], key=lambda route: route["name"])
    needed = required_access(JobConfig.model_validate(data))

    assert needed == access(writes=("orders",), dead_letter="dlq")  # as if the NATS routes were not there
    only_nats = JobConfig.model_validate(data | {"routes": nats_routes})
    assert [u.name for u in required_access(only_nats).topics] == ["dlq", JOURNAL]
    assert required_access(only_nats).consumer_groups == (READER,)


@pytest.mark.parametrize(
    ("brokers", "replicas", "min_insync"), [(1, 1, "1"), (2, 2, "1"), (3, 3, "2"), (9, 3, "2")]
)
def test_journal_topic_spec(brokers: int, replicas: int, min_insync: str) -> None:
    spec = journal_topic_spec(JournalCreation("j", 4), brokers)

    assert (spec.name, spec.partitions, spec.replication_factor) == ("j", 4, replicas)
    assert spec.config == {
        "cleanup.policy": "delete",
        "retention.ms": "604800000",
        "min.insync.replicas": min_insync,
        "unclean.leader.election.enable": "false",
    }


def test_kafka_implications_and_message_order() -> None:
    assert granted([W]) == {W, D}
    assert granted([Operation.ALTER_CONFIGS]) == {Operation.ALTER_CONFIGS, Operation.DESCRIBE_CONFIGS}
    assert granted([Operation.ALL]) == frozenset(Operation)
    assert granted([Operation.CREATE]) == {Operation.CREATE}
    assert operation_list([D, W, R]) == "READ, WRITE, DESCRIBE"


@pytest.mark.parametrize(
    ("acl_answers", "cluster", "expected"),
    [
        ([AclAnswer.SECURITY_DISABLED], None, Authorizer.ABSENT),
        ([AclAnswer.INCONCLUSIVE, AclAnswer.SECURITY_DISABLED], None, Authorizer.ABSENT),
        ([AclAnswer.DENIED], None, Authorizer.PRESENT),
        ([AclAnswer.ACCEPTED], None, Authorizer.PRESENT),
        ([AclAnswer.INCONCLUSIVE], frozenset({D}), Authorizer.PRESENT),
        ([AclAnswer.INCONCLUSIVE], evaluation.CLUSTER_OPERATIONS, Authorizer.UNKNOWN),
        ([AclAnswer.INCONCLUSIVE], None, Authorizer.UNKNOWN),
    ],
)
def test_detect_authorizer(
    acl_answers: list[AclAnswer], cluster: frozenset[Operation] | None, expected: Authorizer
) -> None:
    assert detect_authorizer(acl_answers, cluster) is expected


def test_everything_allowed_is_ready_with_no_notes() -> None:
    needed = access(writes=("orders",), reads=("replies",), dead_letter="dlq", exactly_once=True)

    result = evaluate(needed, answers(needed), now=NOW)

    assert result.verdict is Verdict.READY and result.ready
    assert result.problems == () and result.notes == ()
    assert result.condition.dump() == {
        "type": "KafkaReady",
        "status": "True",
        "reason": "Verified",
        "message": "checked 4 topics, consumer groups orders.jms-bridge.journal-reader, "
        "orders.jms-bridge.ingress and transactional ids orders.jms-bridge.*",
    }
    assert result.retry_after == 60


@pytest.mark.parametrize(
    ("topic", "allowed", "missing", "why"),
    [
        ("orders", {R, D}, "WRITE", "destination of route to-kafka-orders"),
        ("orders", set(), "WRITE, DESCRIBE", "destination of route to-kafka-orders"),
        ("dlq", {D}, "WRITE", "dead-letter topic"),
        ("replies", {W}, "READ", "source of route from-kafka-replies"),
        (JOURNAL, {R}, "WRITE", "journal"),
        (JOURNAL, {D}, "READ, WRITE", "journal"),
    ],
)
def test_a_missing_topic_operation_is_a_hard_failure_naming_topic_and_operation(
    topic: str, allowed: set[Operation], missing: str, why: str
) -> None:
    needed = access(writes=("orders",), reads=("replies",), dead_letter="dlq")
    probe = answers(needed, topics={topic: TopicAnswer(Lookup.FOUND, frozenset(allowed))})

    result = evaluate(needed, probe, now=NOW)

    assert result.stalled
    assert result.condition.status == "False"
    assert result.condition.reason == "TopicAuthorizationFailed"
    assert result.condition.message == f"topic {topic}: missing {missing} ({why})"
    assert [(p.reason, p.subject) for p in result.problems] == [(Reason.TOPIC_AUTHORIZATION_FAILED, topic)]


def test_implied_operations_count_as_allowed() -> None:
    needed = access(writes=("orders",), reads=("replies",))
    probe = answers(
        needed,
        topics={
            "orders": TopicAnswer(Lookup.FOUND, frozenset({W})),
            "replies": TopicAnswer(Lookup.FOUND, frozenset({R})),
            JOURNAL: TopicAnswer(Lookup.FOUND, frozenset({Operation.ALL})),
        },
    )

    assert evaluate(needed, probe, now=NOW).ready


def test_describe_denied_means_every_needed_operation_is_missing() -> None:
    """Kafka answers TOPIC_AUTHORIZATION_FAILED to a describe without DESCRIBE, whether or not it exists."""
    needed = access(writes=("orders",))
    probe = answers(needed, topics={JOURNAL: TopicAnswer(Lookup.DENIED)})

    result = evaluate(needed, probe, now=NOW)

    assert result.condition.reason == "TopicAuthorizationFailed"
    assert result.condition.message == f"topic {JOURNAL}: missing READ, WRITE, DESCRIBE (journal)"


@pytest.mark.parametrize("authorizer", [Authorizer.PRESENT, Authorizer.UNKNOWN])
def test_unreported_operations_are_noted_not_failed(authorizer: Authorizer) -> None:
    needed = access(writes=("orders",))
    probe = answers(
        needed,
        authorizer=authorizer,
        topics={"orders": TopicAnswer(Lookup.FOUND, None)},
        groups={READER: GroupAnswer(Lookup.FOUND, None)},
    )

    result = evaluate(needed, probe, now=NOW)

    assert result.ready
    assert result.notes == (
        "topic orders: WRITE, DESCRIBE not verified, the broker did not report authorized operations",
        f"consumer group {READER}: READ not verified, the broker did not report authorized operations",
    )
    assert result.condition.message.endswith("; ".join(result.notes))


def test_without_an_authorizer_everything_is_allowed_and_the_status_says_so() -> None:
    needed = access(writes=("orders",), exactly_once=True)
    probe = ProbeResult(
        reachable=True,
        authorizer=Authorizer.ABSENT,
        topics={use.name: TopicAnswer(Lookup.FOUND) for use in needed.topics},
        groups={READER: GroupAnswer(Lookup.NOT_FOUND)},
        transactional_id=TransactionalIdAnswer(Access.ALLOWED),
    )

    result = evaluate(needed, probe, now=NOW)

    assert result.ready
    assert result.notes == ("no authorizer found: all operations allowed",)
    assert "no authorizer found: all operations allowed" in result.condition.message


def test_every_missing_topic_is_named_and_not_found_comes_first() -> None:
    needed = access(writes=("orders", "audit"), reads=("replies",), dead_letter="dlq")
    probe = answers(
        needed,
        topics={
            "audit": TopicAnswer(Lookup.FOUND, frozenset({D})),
            "dlq": TopicAnswer(Lookup.NOT_FOUND),
            "orders": TopicAnswer(Lookup.NOT_FOUND),
            "replies": TopicAnswer(Lookup.FOUND, frozenset({D})),
        },
        groups={READER: GroupAnswer(Lookup.DENIED)},
    )

    result = evaluate(needed, probe, now=NOW)

    assert result.condition.reason == "TopicNotFound"
    assert result.condition.message == (
        "topic dlq: does not exist (dead-letter topic); "
        "topic orders: does not exist (destination of route to-kafka-orders); "
        "topic audit: missing WRITE (destination of route to-kafka-audit); "
        "topic replies: missing READ (source of route from-kafka-replies); "
        f"consumer group {READER}: missing READ"
    )
    assert [p.reason for p in result.problems] == [
        Reason.TOPIC_NOT_FOUND,
        Reason.TOPIC_NOT_FOUND,
        Reason.TOPIC_AUTHORIZATION_FAILED,
        Reason.TOPIC_AUTHORIZATION_FAILED,
        Reason.GROUP_AUTHORIZATION_FAILED,
    ]


def test_journal_creation_refused_or_failed() -> None:
    needed = access(create_journal=True)
    refused = answers(needed, topics={JOURNAL: TopicAnswer(Lookup.NOT_FOUND, creation_denied=True)})
    failed = answers(
        needed, topics={JOURNAL: TopicAnswer(Lookup.NOT_FOUND, creation_error="Replication factor too large")}
    )
    created = answers(needed, topics={JOURNAL: TopicAnswer(Lookup.FOUND, frozenset({R, W}), created=True)})

    result = evaluate(needed, refused, now=NOW)
    assert result.condition.reason == "TopicAuthorizationFailed"
    assert result.condition.message == (
        f"topic {JOURNAL}: does not exist and creating it was refused, missing CREATE (journal)"
    )
    result = evaluate(needed, failed, now=NOW)
    assert result.condition.reason == "TopicNotFound"
    assert result.condition.message == (
        f"topic {JOURNAL}: does not exist (journal); creating it failed: Replication factor too large"
    )
    result = evaluate(needed, created, now=NOW)
    assert result.ready and result.notes == (f"created topic {JOURNAL} (journal)",)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (GroupAnswer(Lookup.FOUND, frozenset({R})), None),
        (GroupAnswer(Lookup.FOUND, frozenset({D})), f"consumer group {READER}: missing READ"),
        (GroupAnswer(Lookup.DENIED), f"consumer group {READER}: missing READ"),
        # A group nobody joined yet: brokers that report operations by name are judged as usual ...
        (GroupAnswer(Lookup.NOT_FOUND, frozenset({R, D})), None),
        (GroupAnswer(Lookup.NOT_FOUND, frozenset({D})), f"consumer group {READER}: missing READ"),
    ],
)
def test_group_read(answer: GroupAnswer, expected: str | None) -> None:
    needed = access()

    result = evaluate(needed, answers(needed, groups={READER: answer}), now=NOW)

    if expected is None:
        assert result.ready
    else:
        assert result.condition.reason == "GroupAuthorizationFailed"
        assert result.condition.message == expected


def test_a_group_that_does_not_exist_yet_without_reported_operations() -> None:
    """... and without an answer, READ stays unverified (a note) with an authorizer, allowed without one."""
    needed = access()
    group = {READER: GroupAnswer(Lookup.NOT_FOUND, None)}

    with_authorizer = evaluate(needed, answers(needed, groups=group), now=NOW)
    without = evaluate(needed, answers(needed, authorizer=Authorizer.ABSENT, groups=group), now=NOW)

    assert with_authorizer.ready
    assert with_authorizer.notes == (
        f"consumer group {READER}: READ not verified, it does not exist yet and the broker did not report "
        "authorized operations",
    )
    assert without.ready and without.notes == ("no authorizer found: all operations allowed",)


def test_transactional_id_refused() -> None:
    needed = access(exactly_once=True)
    probe = answers(
        needed,
        transactional_id=TransactionalIdAnswer(Access.DENIED, "Transactional Id authorization failed"),
    )

    result = evaluate(needed, probe, now=NOW)

    assert result.stalled
    assert result.condition.reason == "TransactionalIdAuthorizationFailed"
    assert result.condition.message == (
        "transactional ids orders.jms-bridge.*: missing WRITE, DESCRIBE (initialising "
        "orders.jms-bridge.preflight was refused: Transactional Id authorization failed)"
    )


def test_idempotent_write_refused_on_an_old_broker() -> None:
    needed = access(exactly_once=True)
    probe = answers(
        needed,
        transactional_id=TransactionalIdAnswer(
            Access.DENIED, "Cluster authorization failed", cluster_denied=True
        ),
    )

    result = evaluate(needed, probe, now=NOW)

    assert result.condition.reason == "TransactionalIdAuthorizationFailed"
    assert result.condition.message.startswith("cluster: missing IDEMPOTENT_WRITE")


def test_transactional_id_unknown_is_a_note_and_denied_is_refused_in_either_mode() -> None:
    unknown = TransactionalIdAnswer(Access.UNKNOWN, "initialising orders.jms-bridge.preflight: timed out")
    needed = access(exactly_once=True)

    result = evaluate(needed, answers(needed, transactional_id=unknown), now=NOW)

    assert result.ready
    assert result.notes == (
        "transactional ids orders.jms-bridge.*: not verified, initialising orders.jms-bridge.preflight: "
        "timed out",
    )
    at_least_once = access()  # its journal is written in transactions all the same
    denied = TransactionalIdAnswer(Access.DENIED, "refused")
    refused = evaluate(at_least_once, answers(at_least_once, transactional_id=denied), now=NOW)
    assert refused.condition.reason == "TransactionalIdAuthorizationFailed"


def test_unusable_client_settings_are_a_hard_failure_at_once() -> None:
    result = evaluate(
        access(), ProbeResult.invalid('No such configuration property: "sasl.passwrd"'), now=NOW
    )

    assert result.stalled
    assert result.condition.reason == "InvalidSpec"
    assert "sasl.passwrd" in result.condition.message


def test_a_long_message_is_cut_at_a_whole_problem_and_says_how_many_are_left_out() -> None:
    topics = [f"topic-{i:03d}-{'x' * 60}" for i in range(200)]
    needed = access(writes=topics)
    probe = answers(needed, topics={t: TopicAnswer(Lookup.NOT_FOUND) for t in topics})

    result = evaluate(needed, probe, now=NOW)

    assert len(result.problems) == 200
    assert len(result.condition.message) <= MESSAGE_LIMIT
    assert result.condition.message.endswith("more")
    assert topics[0] in result.condition.message


# ---------------------------------------------------------------------------------------------------
# Unreachable: transient within the grace period, hard after it


def test_grace_expired() -> None:
    assert not grace_expired(100.0, 100.0, 30.0)
    assert not grace_expired(100.0, 129.9, 30.0)
    assert grace_expired(100.0, 130.0, 30.0)


def test_unreachable_is_transient_until_the_grace_period_ends_then_a_hard_failure() -> None:
    needed = access(bootstrap="kafka:9092")
    settings = CheckSettings(interval_seconds=60, grace_seconds=120, retry_seconds=5)
    down = ProbeResult.unreachable("all brokers are down")

    first = evaluate(needed, down, now=NOW, state=None, settings=settings)
    assert first.verdict is Verdict.TRANSIENT and first.reconciling
    assert first.condition.dump() == {
        "type": "KafkaReady",
        "status": "Unknown",
        "reason": "KafkaUnreachable",
        "message": "Kafka at kafka:9092 did not answer: all brokers are down; retrying, a hard failure if "
        "it still does not answer in 120s",
    }
    assert first.state == CheckState(unreachable_since=NOW, failures=1)

    # Retries back off (5, 10, 20, 40 s), never past the end of the grace period.
    state, now, delays = first.state, NOW, [first.retry_after]
    while True:
        now += delays[-1]
        result = evaluate(needed, down, now=now, state=state, settings=settings)
        if not result.reconciling:
            break
        assert result.state.unreachable_since == NOW
        state = result.state
        delays.append(result.retry_after)
    assert delays == [5, 10, 20, 40, 45]
    assert now == NOW + 120

    assert result.stalled
    assert result.condition.status == "False"
    assert result.condition.reason == "KafkaUnreachable"
    assert result.condition.message == (
        "Kafka at kafka:9092 unreachable for 120s (grace period 120s): all brokers are down"
    )
    assert result.retry_after == 60
    assert result.state.unreachable_since == NOW  # still counting until it answers

    back = evaluate(needed, answers(needed), now=now + 60, state=result.state, settings=settings)
    assert back.ready and back.state == CheckState()


def test_a_cluster_that_answers_again_restarts_the_grace_period() -> None:
    needed = access()
    settings = CheckSettings(grace_seconds=100)
    down = ProbeResult.unreachable("no answer")

    early = evaluate(needed, down, now=NOW, settings=settings)
    ok = evaluate(needed, answers(needed), now=NOW + 90, state=early.state, settings=settings)
    again = evaluate(needed, down, now=NOW + 95, state=ok.state, settings=settings)

    assert again.reconciling and again.state.unreachable_since == NOW + 95


def test_every_refusal_of_the_clients_is_a_reason_of_the_checks() -> None:
    """The probe reports a refusal by its kind's name: each must be a reason the status can carry."""
    from jmsbridge_operator.kafka_checks.evaluation import Reason

    from bridge_job.kafka.refusals import RefusalKind

    assert {kind.value for kind in RefusalKind} <= {reason.value for reason in Reason}
