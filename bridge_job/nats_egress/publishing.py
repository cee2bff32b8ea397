"""The egress's way to NATS: what the jmsToNats routes of a range publish, from the egress task's process.

A range's NATS messages are published and flushed before the range's progress is committed (its Kafka
write, or its transaction with `exactlyOnce`), so none is lost; a range written again after a crash
publishes them again: at least once to NATS, whatever `spec.delivery` says for Kafka (docs/nats.md).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

from bridge_job.config import JobConfig
from bridge_job.nats.link import NatsLink
from bridge_job.nats.message import NatsPublish

_links: dict[str, NatsLink] = {}  # per bridge id, for this process's tasks
_lock = threading.Lock()


def publish_all(config: JobConfig, messages: Sequence[NatsPublish]) -> None:
    if messages:
        _link(config).publish_all(messages)


def _link(config: JobConfig) -> NatsLink:
    with _lock:
        link = _links.get(config.bridge_id)
        if link is None:
            assert config.bridge.nats is not None  # JobConfig requires it for jmsToNats routes
            name = f"jmsbridge-{config.bridge_id}-egress-{os.getpid()}"
            link = NatsLink(config.bridge.nats, name, config.bridge.outages.patience_seconds)
            link.connect()
            _links[config.bridge_id] = link
        return link
