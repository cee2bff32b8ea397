"""The default bridge id (bridge_job/config/names.py): one bridge's across namespaces, always a valid id."""

from __future__ import annotations

import re

import pytest

from bridge_job.config import BRIDGE_ID_PATTERN, default_bridge_id


@pytest.mark.parametrize(
    ("namespace", "name", "expected"),
    [
        ("apps", "orders", "apps-orders"),
        (None, "orders", "orders"),  # a local run: no namespace
        ("", "orders", "orders"),
    ],
)
def test_the_default_id_is_the_namespace_and_the_name(
    namespace: str | None, name: str, expected: str
) -> None:
    assert default_bridge_id(namespace, name) == expected


def test_one_name_in_two_namespaces_gets_two_ids() -> None:
    assert default_bridge_id("apps", "orders") != default_bridge_id("payments", "orders")


@pytest.mark.parametrize(
    ("namespace", "name"),
    [
        ("team-with-a-rather-long-namespace", "orders-to-kafka-bridge"),  # over 40 characters
        ("apps", "orders.v2"),  # a dotted name: no DNS label
        ("apps", "x" * 253),
    ],
)
def test_ids_that_would_not_fit_are_shortened_with_a_hash_of_the_whole(namespace: str, name: str) -> None:
    made = default_bridge_id(namespace, name)
    assert re.fullmatch(BRIDGE_ID_PATTERN, made)
    assert len(made) <= 40
    assert made.startswith(f"{namespace}-")
    # Names that shorten alike still get ids of their own.
    assert made != default_bridge_id(namespace, name + "-2")
    assert default_bridge_id("apps", "orders.v2") != default_bridge_id("apps", "orders-v2")
