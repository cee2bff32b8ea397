"""What the operator stores in a status never holds a credential, whoever put it in a message (pure)."""

from __future__ import annotations

from jmsbridge_operator.kafka_checks.gate import held
from jmsbridge_operator.status import ApplicationState, BridgeOutcome, bridge_status, find_condition

from bridge_job.redaction import MASK

SECRET = "hunter2-do-not-print"
URL = f"failover:(tcp://app:{SECRET}@amq:61616)?jms.password={SECRET}"


def test_a_failed_applications_error_message_is_redacted() -> None:
    body = {"status": {"applicationState": {"state": "FAILED", "errorMessage": f"jmsbridge stopped: {URL}"}}}
    app = ApplicationState.observe("primary", "b-primary", body)
    status = bridge_status(BridgeOutcome(generation=1, bridge_id="b", applications=(app,)), None, "now")
    ready = find_condition(status, "Ready") or {}
    assert f"tcp://app:{MASK}@amq:61616)?jms.password={MASK}" in ready["message"]
    assert SECRET not in str(status)


def test_a_gate_condition_is_redacted() -> None:
    gate = held("KafkaUnreachable", f"cannot reach sasl.jaas.config={SECRET}")
    status = bridge_status(BridgeOutcome(generation=1, bridge_id="b", gate=gate), None, "now")
    assert (find_condition(status, "Stalled") or {})["message"] == f"cannot reach sasl.jaas.config={MASK}"
    assert (find_condition(status, "KafkaReady") or {})["message"] == f"cannot reach sasl.jaas.config={MASK}"
