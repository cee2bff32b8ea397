"""What a bridge author may ask of Kubernetes (jmsbridge_operator/policy.py), tried as one would who may write
a JmsBridge in one namespace and wants more: another service account, root, a node's files, capabilities.
Each is refused as an invalid spec, naming the field and the chart value that would allow it, and
nothing is rendered; the platform team's chart values allow them."""

from __future__ import annotations

from typing import Any

import pytest
from jmsbridge_operator.acceptance import validate
from jmsbridge_operator.kafka_checks.gate import open_gate
from jmsbridge_operator.options import OperatorOptions
from jmsbridge_operator.planning import Observed, plan
from jmsbridge_operator.policy import Policy
from jmsbridge_operator.render import render
from jmsbridge_operator.status import find_condition

from tests.operator.helpers import route
from tests.operator.restricted import pods_of, violations
from tests.operator.test_planning import NOW, cluster_bridge

ATTACKS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "another-service-account",
        {"serviceAccount": "payments-admin"},
        "spec.spark.serviceAccount",
        "the bridges' pods run as the bridge's own service account, not 'payments-admin'",
    ),
    (
        "root",
        {"pod": {"securityContext": {"runAsUser": 0, "runAsNonRoot": False}}},
        "spec.spark.pod.securityContext.runAsUser",
        "runs as root (uid 0)",
    ),
    (
        "a-node-s-files",
        {"pod": {"volumes": [{"name": "node", "hostPath": {"path": "/"}}]}},
        "spec.spark.pod.volumes",
        "volume node is a hostPath volume",
    ),
    (
        "capabilities",
        {"pod": {"containerSecurityContext": {"capabilities": {"add": ["SYS_ADMIN"], "drop": ["ALL"]}}}},
        "spec.spark.pod.containerSecurityContext.capabilities.add",
        "adds capabilities SYS_ADMIN",
    ),
    (
        "capabilities-kept",
        {"pod": {"containerSecurityContext": {"capabilities": {"drop": ["NET_RAW"]}}}},
        "spec.spark.pod.containerSecurityContext.capabilities.drop",
        "keeps capabilities (drop ALL)",
    ),
    (
        "privilege-escalation",
        {"pod": {"containerSecurityContext": {"allowPrivilegeEscalation": True}}},
        "spec.spark.pod.containerSecurityContext.allowPrivilegeEscalation",
        "allows privilege escalation",
    ),
    (
        "no-seccomp",
        {"pod": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}},
        "spec.spark.pod.securityContext.seccompProfile",
        "seccomp profile Unconfined",
    ),
]


def bridge_asking(spark: dict[str, Any]) -> dict[str, Any]:
    body = cluster_bridge()
    body["spec"].setdefault("spark", {}).update(spark)
    return body


@pytest.mark.parametrize(("asks", "field", "says"), [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_what_the_policy_does_not_allow_is_refused_naming_the_field(
    asks: dict[str, Any], field: str, says: str
) -> None:
    decided = plan(Observed(bridge_asking(asks), [route("r1")]), open_gate, NOW)
    assert decided.writes == []  # nothing rendered: no pod ever runs so
    stalled = find_condition(decided.status, "Stalled")
    assert stalled is not None and stalled["reason"] == "InvalidSpec", stalled
    assert f"{field}: {says}" in stalled["message"]
    assert "bridgePolicy." in stalled["message"]  # what the platform team would set to allow it


@pytest.mark.parametrize(("asks", "field", "says"), [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_the_platform_team_allows_them(asks: dict[str, Any], field: str, says: str) -> None:
    policy = OperatorOptions.from_env(
        {"JMSBRIDGE_SERVICE_ACCOUNTS": "payments-admin, spark", "JMSBRIDGE_PRIVILEGED_PODS": "true"}
    ).policy
    checked = validate(bridge_asking(asks), [], namespace="apps", policy=policy)
    assert checked.problems == () and checked.config is not None


def test_the_default_account_and_restricted_pods_need_nothing_allowed() -> None:
    restricted = {
        "pod": {
            "securityContext": {
                "runAsUser": 1000,
                "runAsNonRoot": True,
                "seccompProfile": {"type": "Localhost"},
            },
            "containerSecurityContext": {"capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}},
            "volumes": [
                {"name": "tls", "secret": {"secretName": "kafka-tls"}},
                {"name": "s", "emptyDir": {}},
            ],
        }
    }
    for asks in ({}, restricted):  # no serviceAccount: the bridge's own
        checked = validate(bridge_asking(asks), [], namespace="apps", policy=Policy())
        assert checked.problems == (), checked.problems


@pytest.mark.parametrize(
    ("asks", "field", "says"), [a[1:] for a in ATTACKS[1:]], ids=[a[0] for a in ATTACKS[1:]]
)
def test_the_policy_refuses_what_the_restricted_profile_refuses(
    asks: dict[str, Any], field: str, says: str
) -> None:
    """Cross-checked with the profile's own checker (tests/operator/restricted.py): allowed, the same spec
    renders pods the profile refuses; so the default policy's refusal is what keeps them out."""
    body = bridge_asking(asks)
    assert validate(body, [], namespace="apps").problems  # the default policy
    checked = validate(body, [], namespace="apps", policy=Policy(privileged_pods=True))
    assert checked.bridge is not None and checked.config is not None
    pods = [
        pod
        for app in render(checked.bridge, checked.config).applications.values()
        for pod in pods_of(app).values()
    ]
    assert any(violations(pod) for pod in pods)


def test_secrets_the_pods_read_must_be_marked_for_the_bridge_unless_the_policy_waives_it() -> None:
    body = bridge_asking({})
    body["spec"]["jms"]["credentialsSecretRef"] = {"name": "amq-credentials"}
    name = body["metadata"]["name"]
    for marks, refused in (
        ({"amq-credentials": frozenset()}, True),  # unmarked
        ({"amq-credentials": frozenset({"payments"})}, True),  # another bridge's
        ({"amq-credentials": frozenset({"payments", name})}, False),
        ({"amq-credentials": frozenset({"*"})}, False),  # every bridge of the namespace
        ({}, False),  # not read (yet, or the operator reads no Secrets): the pods' own business
    ):
        checked = validate(body, [], namespace="apps", secret_marks=marks)
        assert bool(checked.problems) is refused, (marks, checked.problems)
        assert checked.unmarked == (("amq-credentials",) if refused else ())
        waived = validate(
            body, [], namespace="apps", secret_marks=marks, policy=Policy(unmarked_secrets=True)
        )
        assert waived.problems == ()
    checked = validate(body, [], namespace="apps", secret_marks={"amq-credentials": frozenset()})
    assert checked.problems[0].message == (
        f"Secret amq-credentials (read by the bridge's pods) is not marked for bridge {name}: its owner "
        f"allows it with the annotation jmsbridge.dev/bridges={name} (a comma-separated list of bridges, "
        "or * for every bridge of the namespace)"
    )


def test_the_former_shared_account_is_refused_and_an_allowed_one_runs_the_pods() -> None:
    """`jms-bridge-job`, the account every bridge of a namespace shared before, is no one's now: a bridge
    naming it says what to do (docs/upgrading.md); one the platform team lists runs both kinds of pod."""
    refused = validate(bridge_asking({"serviceAccount": "jms-bridge-job"}), [], namespace="apps")
    assert [p.message for p in refused.problems] == [
        "spec.spark.serviceAccount: the bridges' pods run as the bridge's own service account, not "
        "'jms-bridge-job' (the platform team lists the others in the chart's bridgePolicy.serviceAccounts; "
        "or remove spec.spark.serviceAccount)"
    ]
    listed = Policy(service_accounts=frozenset({"spark"}))
    checked = validate(bridge_asking({"serviceAccount": "spark"}), [], namespace="apps", policy=listed)
    assert checked.bridge is not None and checked.config is not None, checked.problems
    for app in render(checked.bridge, checked.config).applications.values():
        assert app["spec"]["driver"]["serviceAccount"] == app["spec"]["executor"]["serviceAccount"] == "spark"
    other = validate(bridge_asking({"serviceAccount": "etl"}), [], namespace="apps", policy=listed)
    assert "the bridge's own service account, or as spark, not 'etl'" in other.problems[0].message
