"""When a range writes the tombstones of the pending requests it answered (no broker: nothing is read)."""

from __future__ import annotations

from typing import Any

from bridge_job.config import JobConfig
from bridge_job.egress import pending_requests
from bridge_job.routing.pending import tombstone
from testbed.builders import config, route


def message_id_bridge(bridge_id: str, **bridge: Any) -> JobConfig:
    jms = {
        "connectionFactory": {"className": "org.apache.activemq.ActiveMQConnectionFactory"},
        "sources": [{"queue": "replies"}],
        "replyQueue": "replies",
    }
    requests = route(
        "in",
        "t",
        direction="kafkaToJms",
        jmsDestination={"queue": "svc"},
        reply={"topics": ["answers"], "correlation": "messageId"},
    )
    return config(requests, jms=jms, bridgeId=bridge_id, **bridge)


def test_at_least_once_tombstones_wait_for_a_later_range_of_their_partition() -> None:
    cfg = message_id_bridge("alo")
    answered = [(cfg.pending_topic, tombstone("ID:1"))]
    pending_requests.sweep(cfg)  # the first sweep (nothing held); the next is a minute away
    assert pending_requests.tombstones(cfg, 0, 0, 10, answered, transactional=False) == []
    assert pending_requests.tombstones(cfg, 0, 0, 10, [], transactional=False) == []  # the range again
    assert pending_requests.tombstones(cfg, 1, 10, 20, [], transactional=False) == []  # another partition
    assert pending_requests.tombstones(cfg, 0, 10, 12, [], transactional=False) == answered


def test_transactional_ranges_write_their_tombstones_with_their_answers() -> None:
    cfg = message_id_bridge("eo", delivery="exactlyOnce")
    answered = [(cfg.pending_topic, tombstone("ID:1"))]
    pending_requests.sweep(cfg)
    assert pending_requests.tombstones(cfg, 0, 0, 10, answered, transactional=True) == answered


def test_bridges_without_message_id_routes_write_none() -> None:
    cfg = config(route("out", "t"))
    assert pending_requests.tombstones(cfg, 0, 0, 10, [], transactional=False) == []
    assert pending_requests.lookup(cfg) is None
