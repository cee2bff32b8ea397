"""A route's `jmsDestination`: a `fromHeader` destination needs `allowed`, a valid regular expression, and the
CRD says so too (security issue 43)."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
from jmsbridge_operator import crdgen

from bridge_job.config import JmsBridgeRoute, field_errors
from bridge_job.config.route import ALLOWED_MAX_LENGTH, JmsDestination


def rejections(destination: dict[str, Any], direction: str = "kafkaToJms") -> list[tuple[str, str]]:
    spec: dict[str, Any] = {"bridgeRef": {"name": "orders"}, "direction": direction}
    spec |= {"natsSubject": "svc.>"} if direction == "natsToJms" else {"kafkaTopic": "replies"}
    body = {
        "apiVersion": "jmsbridge.dev/v1alpha1",
        "kind": "JmsBridgeRoute",
        "metadata": {"name": "r"},
        "spec": spec | {"jmsDestination": destination},
    }
    try:
        JmsBridgeRoute.model_validate(body)
    except pydantic.ValidationError as error:
        return field_errors(error)
    return []


@pytest.mark.parametrize("direction", ["kafkaToJms", "natsToJms"])
def test_from_header_without_allowed_is_refused_saying_what_to_set(direction: str) -> None:
    ((at, message),) = rejections({"fromHeader": "jms.JMSReplyTo"}, direction)
    assert at == "spec.jmsDestination"
    assert "`fromHeader` needs `allowed`" in message and "queue://NAME" in message


def test_from_header_with_allowed_is_taken() -> None:
    assert rejections({"fromHeader": "jms.JMSReplyTo", "allowed": r"queue://orders\..*"}) == []


def test_allowed_without_from_header_is_refused() -> None:
    ((at, message),) = rejections({"queue": "q", "allowed": "queue://q"})
    assert (at, message) == ("spec.jmsDestination", "`allowed` applies to `fromHeader` only")


@pytest.mark.parametrize("expression", ["queue://(orders", "queue://[a-", "*", "queue://x{2,1}"])
def test_an_allowed_that_is_no_regular_expression_is_refused_naming_the_field(expression: str) -> None:
    ((at, message),) = rejections({"fromHeader": "to", "allowed": expression})
    assert at == "spec.jmsDestination.allowed"
    assert message.startswith("`allowed` is no regular expression: ")


def test_allowed_is_bounded() -> None:
    assert rejections({"fromHeader": "to", "allowed": "q" * ALLOWED_MAX_LENGTH}) == []
    ((at, message),) = rejections({"fromHeader": "to", "allowed": "q" * (ALLOWED_MAX_LENGTH + 1)})
    assert at == "spec.jmsDestination.allowed" and str(ALLOWED_MAX_LENGTH) in message
    ((at, _),) = rejections({"fromHeader": "to", "allowed": ""})
    assert at == "spec.jmsDestination.allowed"


def test_the_crd_carries_the_rules_as_cheap_cel() -> None:
    version = crdgen.route_crd()["spec"]["versions"][0]
    destination = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["jmsDestination"]
    assert destination["properties"]["allowed"]["maxLength"] == ALLOWED_MAX_LENGTH
    rules = {r["rule"]: r for r in destination["x-kubernetes-validations"]}
    needs = rules["!has(self.fromHeader) || has(self.allowed)"]
    assert needs["message"].startswith("`fromHeader` needs `allowed`") and needs["fieldPath"] == ".allowed"
    only = rules["!has(self.allowed) || has(self.fromHeader)"]
    assert only["message"] == "`allowed` applies to `fromHeader` only"
    # the regular expression is checked when the model loads it: CEL has no cheap way to
    assert not any("matches" in rule for rule in rules)


def test_the_model_schema_states_the_same_rules() -> None:
    written = JmsDestination.model_json_schema()["x-kubernetes-validations"]
    assert any(r["rule"] == "!has(self.fromHeader) || has(self.allowed)" for r in written)
