"""Shared fixtures: real brokers, one of each per test session, on free loopback ports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.brokers import ActiveMqBroker, KafkaBroker

pytest_plugins = ["tests.kubeapi.fixtures"]


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaBroker]:
    broker = KafkaBroker().start()
    yield broker
    broker.cleanup()


@pytest.fixture(scope="session")
def activemq() -> Iterator[ActiveMqBroker]:
    broker = ActiveMqBroker().start()
    yield broker
    broker.cleanup()
