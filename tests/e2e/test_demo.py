"""`jmsbridge demo` as a user runs it (what scripts/demo.sh runs after the setup): its own ActiveMQ, Kafka
and nats-server, the job on examples/, and what it prints: the records in each topic, the Kafka service's
reply to a JMS requester, and a JMS service's answer to a NATS requester."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e


def test_the_demo_shows_the_records_and_both_replies() -> None:
    demo = subprocess.Popen(
        [sys.executable, "-m", "jmsbridge", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,  # apart: the JVM's lines would interleave with what the demo prints
        text=True,
    )
    try:
        out, err = demo.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        demo.send_signal(signal.SIGINT)  # the demo's `finally` stops its brokers and job
        out, err = demo.communicate(timeout=180)
        pytest.fail(f"the demo ran for more than 600 s:\n{out}\n{err[-4000:]}")
    assert demo.returncode == 0, f"{out}\n{err[-4000:]}"
    lines = out.splitlines()
    for topic in ("jms-bridge-dlq", "orders", "orders.priority", "payments", "prices"):
        assert f"topic {topic}: 1 record(s)" in lines, out
    assert (
        "  and answered on orders.replies; the requester received: "
        'JMSCorrelationID=ask-1 {"order": 3, "answer": "yes, 12 left"}'
    ) in lines, out
    # A NATS request on demo.orders.stock reached the demo's JMS service with the bridge's JMSReplyTo,
    # and the service's answer came back to the NATS requester.
    assert any(
        line.startswith("    JMSReplyTo=temp-queue://") and "NatsSubject=demo.orders.stock" in line
        for line in lines
    ), out
    assert (
        '  and answered to its JMSReplyTo; the NATS requester received: {"order": 4, "answer": "yes, 3 left"}'
    ) in lines, out
    done = "demo done: every message arrived where its route sends it, and both replies came back"
    assert lines[-1] == done, out
