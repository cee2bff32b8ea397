"""The destination a header names goes only where the route's `allowed` lets it (security issue 43)."""

from __future__ import annotations

import pytest

from bridge_job.config import JmsBridgeRouteSpec, Route
from bridge_job.message import Destination, DestinationKind
from bridge_job.routing.failures import SoftFailure, SoftFailureReason
from bridge_job.routing.sends import jms_target

ORDERS = r"queue://orders\..*"


def header_route(allowed: str = ORDERS, direction: str = "kafkaToJms") -> Route:
    source = {"natsSubject": "svc.>"} if direction == "natsToJms" else {"kafkaTopic": "orders-in"}
    destination = {"fromHeader": "to", "allowed": allowed}
    body = {"bridgeRef": {"name": "b"}, "direction": direction, "jmsDestination": destination} | source
    return Route(name="r", spec=JmsBridgeRouteSpec.model_validate(body))


def target(value: bytes | None, r: Route | None = None) -> Destination:
    return jms_target(r or header_route(), {"to": value}.get if value is not None else lambda _: None)


def refusal(value: bytes, r: Route | None = None) -> SoftFailure:
    with pytest.raises(SoftFailure) as caught:
        target(value, r)
    assert caught.value.reason is SoftFailureReason.DESTINATION_NOT_ALLOWED
    return caught.value


@pytest.mark.parametrize("direction", ["kafkaToJms", "natsToJms"])
def test_a_destination_inside_the_pattern_is_the_target(direction: str) -> None:
    r = header_route(direction=direction)
    assert target(b"queue://orders.created", r) == Destination(DestinationKind.QUEUE, "orders.created")


@pytest.mark.parametrize("direction", ["kafkaToJms", "natsToJms"])
def test_a_destination_outside_the_pattern_is_refused_naming_header_destination_and_pattern(
    direction: str,
) -> None:
    failure = refusal(b"queue://admin.commands", header_route(direction=direction))
    assert failure.error == (
        r"header to: destination 'queue://admin.commands' is outside the route's jmsDestination.allowed: "
        r"queue://orders\..*"
    )


@pytest.mark.parametrize(
    "value",
    [
        b"topic://orders.created",  # the right name, the wrong kind
        b"queue://orders",  # short of what is allowed
        b"queue://x.queue://orders.a",  # the pattern inside the value, not all of it
        b"queue://admin.commands?queue://orders.a",
    ],
)
def test_the_pattern_must_match_the_whole_uri(value: bytes) -> None:
    assert "is outside" in refusal(value).error


@pytest.mark.parametrize(
    "name",
    [
        "orders.a,admin.commands",  # ActiveMQ: a composite destination, both queues
        "orders.a,topic://admin.events",
        "orders.>",  # ActiveMQ wildcards: every queue they match
        "orders.*",
        "orders.#",  # Artemis's
        "orders.a admin",
        "orders.a\nadmin",
        "orders." + "a" * 249,  # 256 characters: longer than a route may name
    ],
)
def test_a_name_of_several_destinations_is_refused_whatever_the_pattern(name: str) -> None:
    failure = refusal(f"queue://{name}".encode(), header_route(allowed="queue://.*"))
    assert "is not one destination name" in failure.error


def test_a_huge_header_is_shown_cut() -> None:
    failure = refusal(b"queue://" + b"x" * 100_000)
    assert len(failure.error) < 600


@pytest.mark.parametrize(
    ("value", "error"),
    [(None, "header to is not set"), (b"admin.commands", "queue://NAME or topic://NAME")],
)
def test_a_missing_or_malformed_header_is_still_no_destination(value: bytes | None, error: str) -> None:
    with pytest.raises(SoftFailure) as caught:
        target(value)
    assert caught.value.reason is SoftFailureReason.NO_DESTINATION and error in caught.value.error


def test_temporary_reply_queues_and_alternatives() -> None:
    r = header_route(allowed=r"queue://ID:.*|topic://prices\.(eu|us)")
    assert target(b"queue://ID:host-4711-1700000000000-1:1:1", r).name == "ID:host-4711-1700000000000-1:1:1"
    assert target(b"topic://prices.eu", r) == Destination(DestinationKind.TOPIC, "prices.eu")
    assert "is outside" in refusal(b"topic://prices.asia", r).error
    assert "is outside" in refusal(b"queue://orders.a", r).error


def test_named_destinations_need_no_pattern() -> None:
    body = {"bridgeRef": {"name": "b"}, "direction": "kafkaToJms", "kafkaTopic": "t"}
    r = Route(
        name="r",
        spec=JmsBridgeRouteSpec.model_validate(body | {"jmsDestination": {"queue": "admin.commands"}}),
    )
    assert jms_target(r, lambda _: b"queue://elsewhere") == Destination(
        DestinationKind.QUEUE, "admin.commands"
    )
