"""Routing: ordered routes, first match wins, destination wildcards, header and property matches."""

from __future__ import annotations

import pytest

from bridge_job.formats.journal import JournalEntry
from bridge_job.message import Destination, DestinationKind, JmsMessage, Property, PropertyType
from bridge_job.routing.routes import RouteTable, address_matches
from testbed.builders import config, route


def message(name: str, kind: DestinationKind = DestinationKind.QUEUE, **fields: object) -> JournalEntry:
    return JournalEntry.of(JmsMessage(destination=Destination(kind, name), body="x", **fields))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("address", "name", "expected"),
    [
        ("orders.in", "orders.in", True),
        ("orders.in", "orders.inx", False),
        ("orders.*", "orders.in", True),
        ("orders.*", "orders.in.eu", False),
        ("orders.>", "orders.in.eu", True),
        ("orders.>", "orders", False),
        ("*.in", "payments.in", True),
        ("a+b.*", "a+b.c", True),
        ("a+b.*", "aab.c", False),
    ],
)
def test_address_wildcards(address: str, name: str, expected: bool) -> None:
    assert address_matches(address, name) is expected


def test_first_matching_route_in_order_wins() -> None:
    table = RouteTable.of(
        config(
            route("catch-all", "everything", order=99),
            route("priority", "orders.priority", order=1, match={"headers": {"JMSType": "priority"}}),
            route("orders", "orders", order=5, match={"address": "orders.*"}),
        ).routes
    )
    assert table.route(message("orders.in", type="priority")).name == "priority"  # type: ignore[union-attr]
    assert table.route(message("orders.in", type="normal")).name == "orders"  # type: ignore[union-attr]
    assert table.route(message("payments.in")).name == "catch-all"  # type: ignore[union-attr]


def test_same_order_breaks_ties_by_name() -> None:
    table = RouteTable.of(config(route("b", "t-b", order=1), route("a", "t-a", order=1)).routes)
    assert table.route(message("q")).name == "a"  # type: ignore[union-attr]


def test_match_on_typed_property_and_destination_type() -> None:
    table = RouteTable.of(
        config(
            route("big", "big", match={"headers": {"size": "3"}, "destinationType": "topic"}),
        ).routes
    )
    size = {"size": Property(PropertyType.SHORT, 3)}
    assert table.route(message("prices", DestinationKind.TOPIC, properties=size)) is not None
    assert table.route(message("prices", DestinationKind.QUEUE, properties=size)) is None
    assert table.route(message("prices", DestinationKind.TOPIC)) is None


def test_no_route_when_nothing_matches() -> None:
    table = RouteTable.of(config(route("orders", "orders", match={"address": "orders.in"})).routes)
    assert table.route(message("other")) is None


def test_kafka_to_jms_routes_are_not_egress_routes() -> None:
    table = RouteTable.of(
        config(route("back", "replies", direction="kafkaToJms", jmsDestination={"queue": "replies"})).routes
    )
    assert table.route(message("replies")) is None
