"""The client ids of the connections that hold no durable subscription (the ingress's, the NATS service's):
unique across pods, whose containers repeat pids; a provider refuses a second connection with an id in use."""

from __future__ import annotations

import pytest

from bridge_job.jms.connection import process_client_id


def test_two_processes_with_the_same_pid_get_different_client_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.getpid", lambda: 57)  # two executor pods' Python workers, say
    first, second = process_client_id("orders", "ingress"), process_client_id("orders", "ingress")
    assert first != second
    assert first.startswith("jmsbridge-orders-ingress-57-") and second.startswith(
        "jmsbridge-orders-ingress-57-"
    )
