"""The ingest's JMS client id: stable for durable subscriptions, per instance for queues (pure)."""

from __future__ import annotations

from bridge_job.ingest.journalling import ingest_client_id
from testbed.builders import config

ACTIVEMQ = {"className": "org.apache.activemq.ActiveMQConnectionFactory"}


def test_queues_get_one_per_instance_so_a_new_active_never_waits_for_a_frozen_one() -> None:
    queues = config(name="orders")
    assert ingest_client_id(queues, "primary") == "jmsbridge-orders-primary"
    assert ingest_client_id(queues, "secondary") == "jmsbridge-orders-secondary"


def test_a_durable_subscription_keeps_one_per_bridge_and_a_set_one_wins() -> None:
    sources = [{"queue": "in"}, {"topic": "prices", "durableSubscription": "bridge"}]
    topics = config(name="orders", jms={"connectionFactory": ACTIVEMQ, "clientId": None, "sources": sources})
    assert ingest_client_id(topics, "secondary") == "jmsbridge-orders"
    named = config(name="orders", jms={"connectionFactory": ACTIVEMQ, "clientId": "mine", "sources": sources})
    assert ingest_client_id(named, "secondary") == "mine"
