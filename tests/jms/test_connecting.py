"""Connecting to a provider: factory class and bean properties, JNDI, credentials, and clear failures."""

from __future__ import annotations

import time

import jpype
import pytest

from bridge_job.config import ConnectionFactorySpec, JmsSource, JmsSpec
from bridge_job.jms import JmsConnection, JmsError
from bridge_job.jms.factories import coerce, connection_factory
from bridge_job.message import Destination, DestinationKind, JmsMessage
from testbed.brokers import ActiveMqBroker, free_port
from testbed.jms import ACTIVEMQ_FACTORY, factory_spec, jndi_spec, receive


def spec_with(class_name: str, **properties: str | int) -> JmsSpec:
    return JmsSpec(
        connection_factory=ConnectionFactorySpec(class_name=class_name, properties=properties),
        sources=[JmsSource(queue="unused")],
    )


def test_bean_properties_are_coerced_to_the_setter_types(activemq: ActiveMqBroker) -> None:
    factory = connection_factory(
        factory_spec(
            activemq.url,
            sendTimeout="5000",  # text -> int
            useAsyncSend="TRUE",  # text -> boolean
            optimizeAcknowledgeTimeOut=250,  # int -> long
            watchTopicAdvisories="false",  # a boolean is written as text
            clientIDPrefix=42,  # number -> String
            brokerUrl=activemq.url,  # the setter's own capitalisation is not required
        )
    )
    assert factory.getSendTimeout() == 5000
    assert factory.isUseAsyncSend() is True
    assert factory.getOptimizeAcknowledgeTimeOut() == 250
    assert factory.isWatchTopicAdvisories() is False
    assert str(factory.getClientIDPrefix()) == "42"
    assert str(factory.getBrokerURL()) == activemq.url


def test_enum_values_are_matched_by_name() -> None:
    time_unit = jpype.JClass("java.util.concurrent.TimeUnit")
    assert coerce("seconds", time_unit.class_) == time_unit.SECONDS
    with pytest.raises(ValueError, match="expected one of NANOSECONDS"):
        coerce("fortnights", time_unit.class_)


def test_unknown_class_is_a_clear_error() -> None:
    with pytest.raises(JmsError, match=r"connection factory class com\.example\.NoSuchFactory is not on the"):
        connection_factory(spec_with("com.example.NoSuchFactory"))


def test_class_that_is_no_connection_factory() -> None:
    neither = r"java\.util\.ArrayList is neither a javax\.jms\.ConnectionFactory nor jakarta\.jms\."
    with pytest.raises(JmsError, match=neither):
        connection_factory(spec_with("java.util.ArrayList"))


def test_unknown_bean_property_names_the_property_and_suggests(activemq: ActiveMqBroker) -> None:
    with pytest.raises(
        JmsError,
        match=rf"{ACTIVEMQ_FACTORY} has no bean property 'sendTimout'; did you mean sendTimeout",
    ):
        connection_factory(factory_spec(activemq.url, sendTimout=10))


def test_bean_property_value_of_the_wrong_type(activemq: ActiveMqBroker) -> None:
    with pytest.raises(JmsError, match=r"sendTimeout = 'soon': expected a 32-bit integer, got 'soon'"):
        connection_factory(factory_spec(activemq.url, sendTimeout="soon"))
    with pytest.raises(JmsError, match=r"useAsyncSend = 2: expected a boolean"):
        connection_factory(factory_spec(activemq.url, useAsyncSend=2))


def test_unreachable_broker_is_a_clear_error() -> None:
    url = f"tcp://127.0.0.1:{free_port()}"
    with pytest.raises(JmsError, match=rf"^cannot connect to {url}: .*Connection refused") as raised:
        JmsConnection(factory_spec(url), credentials=("bridge", "s3cret-pw"))
    assert "s3cret-pw" not in str(raised.value)
    with pytest.raises(JmsError, match=rf"^cannot connect to {url}: ") as raised:
        JmsConnection(factory_spec(url, userName="bridge", password="s3cret-pw"))
    assert "s3cret-pw" not in str(raised.value)


def test_failover_url_with_bounded_retries_gives_up() -> None:
    url = (
        f"failover:(tcp://127.0.0.1:{free_port()})"
        "?startupMaxReconnectAttempts=2&maxReconnectAttempts=2&initialReconnectDelay=50"
    )
    started = time.monotonic()
    with pytest.raises(JmsError, match=r"cannot connect to failover:"):
        JmsConnection(factory_spec(url))
    assert time.monotonic() - started < 15


def test_credentials_are_passed_to_the_provider(spec: JmsSpec, queue: JmsSource) -> None:
    # This broker has no authentication plugin: any user is accepted, and the provider records it.
    with JmsConnection(spec, credentials=("bridge-user", "pw")) as connection:
        assert str(connection._connection.getConnectionInfo().getUserName()) == "bridge-user"


def test_jndi_lookup_connects_and_carries_messages(activemq: ActiveMqBroker, queue: JmsSource) -> None:
    assert queue.queue is not None
    with JmsConnection(jndi_spec(activemq.url), client_id="jndi-test") as connection:
        with connection.producer() as producer:
            sent = producer.send(JmsMessage(Destination(DestinationKind.QUEUE, queue.queue), body="via JNDI"))
        with connection.consumer(queue) as consumer:
            (got,) = receive(consumer, 1)
            consumer.commit()
    assert got.message_id == sent
    assert got.body == "via JNDI"


def test_jndi_unknown_name_is_a_clear_error(activemq: ActiveMqBroker) -> None:
    with pytest.raises(JmsError, match=rf"cannot look up 'NoSuchFactory' in JNDI {activemq.url}"):
        JmsConnection(jndi_spec(activemq.url, name="NoSuchFactory"))


def test_jndi_unknown_context_factory_is_a_clear_error(activemq: ActiveMqBroker) -> None:
    spec = jndi_spec(activemq.url).model_copy(
        update={"jndi": jndi_spec(activemq.url).jndi.model_copy(update={"initial_context_factory": "x.Nope"})}  # type: ignore[union-attr]
    )
    with pytest.raises(JmsError, match=r"cannot create the initial context for JNDI .*x\.Nope"):
        JmsConnection(spec)


def test_duplicate_client_id_is_a_clear_error(spec: JmsSpec, unique: str, activemq: ActiveMqBroker) -> None:
    with (
        JmsConnection(spec, client_id=f"twice-{unique}"),
        pytest.raises(JmsError, match=rf"cannot connect to {activemq.url}: .*twice-{unique}"),
    ):
        JmsConnection(spec, client_id=f"twice-{unique}")


def test_lost_connection_is_reported_on_the_next_call(unique: str) -> None:
    broker = ActiveMqBroker(persistent=False).start()
    try:
        with JmsConnection(factory_spec(broker.url), client_id=f"lost-{unique}") as connection:
            consumer = connection.consumer(JmsSource(queue=f"test.lost.{unique}"))
            assert consumer.receive_batch(1, 10) == []
            broker.kill()
            deadline = time.monotonic() + 20
            # The provider's exception listener usually reports first; otherwise the receive fails itself.
            failed = rf"the connection to {broker.url} failed: |cannot receive from queue://test\.lost\."
            with pytest.raises(JmsError, match=failed):
                while time.monotonic() < deadline:
                    consumer.receive_batch(1, 100)
    finally:
        broker.cleanup()
