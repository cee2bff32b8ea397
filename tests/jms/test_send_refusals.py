"""What a failed JMS send means (jms/errors.py `refusal_of_one_message`), for both flows that send: the
provider's refusal of one message (a soft failure), a user not allowed to send (the bridge stops), or
anything else (the connection's). The causes are the JMS API's own exception classes, in the tests' JVM."""

from __future__ import annotations

import jpype
import pytest

from bridge_job.faults.stops import BridgeStopped
from bridge_job.jms import JmsError
from bridge_job.jms.errors import refusal_of_one_message


def failed_send(java_class: str, text: str) -> JmsError:
    error = JmsError(f"sending to queue://orders failed: {text}")
    error.__cause__ = jpype.JClass(java_class)(text)
    return error


@pytest.mark.parametrize(
    "java_class", ["javax.jms.InvalidDestinationException", "javax.jms.MessageFormatException"]
)
def test_a_message_the_provider_refuses_is_a_soft_failure_with_its_text(java_class: str) -> None:
    error = failed_send(java_class, "no such queue")
    assert refusal_of_one_message(error, "topic orders partition 0 offset 7") == str(error)


def test_a_send_not_allowed_stops_the_bridge_naming_the_record() -> None:
    error = failed_send("javax.jms.JMSSecurityException", "User bridge is not authorized to write")
    with pytest.raises(BridgeStopped) as stopped:
        refusal_of_one_message(error, "topic orders partition 0 offset 7")
    assert str(stopped.value) == (
        f"jmsbridge hard failure: topic orders partition 0 offset 7: {error}: grant the bridge's JMS user "
        "access"
    )


def test_any_other_failure_is_the_connection_s_and_raised_as_it_is() -> None:
    error = failed_send("javax.jms.JMSException", "Connection reset")
    with pytest.raises(JmsError) as raised:
        refusal_of_one_message(error, "NATS orders")
    assert raised.value is error
