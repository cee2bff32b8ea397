"""Fixtures for the JMS adapter tests: the session's ActiveMQ, one JVM, unique names per test.

JPype starts one JVM per process and fixes its classpath then, so the whole pytest process shares a JVM
started with ActiveMQ's client jars (`activemq_classpath()`). Queue, topic and client-id names carry a
per-test suffix so that tests never see each other's messages on the shared broker.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from bridge_job.config import JmsSource, JmsSpec
from bridge_job.jms import JmsConnection, start_jvm
from testbed.brokers import ActiveMqBroker, activemq_classpath
from testbed.jms import factory_spec


@pytest.fixture(scope="session", autouse=True)
def jvm() -> None:
    start_jvm(activemq_classpath())


@pytest.fixture
def unique() -> str:
    return uuid.uuid4().hex[:10]


@pytest.fixture
def queue(unique: str) -> JmsSource:
    return JmsSource(queue=f"test.jms.{unique}")


@pytest.fixture
def spec(activemq: ActiveMqBroker) -> JmsSpec:
    return factory_spec(activemq.url)


@pytest.fixture
def connection(spec: JmsSpec, unique: str) -> Iterator[JmsConnection]:
    with JmsConnection(spec, client_id=f"test-{unique}") as conn:
        yield conn
