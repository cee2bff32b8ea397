"""How large a record a Kafka topic takes, learned once per topic (a record's own size: routing/failures.py).

Two limits apply to every record the bridge writes: the producer's `message.max.bytes` (librdkafka
refuses a larger record before sending it) and the topic's `max.message.bytes` (the broker refuses a
larger batch). A record over either is a poison message, not a broken broker: the bridge checks each
record before producing it and treats one too large as a soft failure (`MessageTooLarge`), so that one
message never stops the rest. docs/egress.md (Size limits) says how to raise them.
"""

from __future__ import annotations

import logging
import threading

from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]

from bridge_job.config import KafkaSpec
from bridge_job.kafka.clients import admin_client, producer_config

log = logging.getLogger("jmsbridge.limits")

PRODUCER_DEFAULT_MAX_BYTES = 1_000_000  # librdkafka's message.max.bytes


class TopicLimits:
    """The largest record each topic takes from the bridge's producers: the smaller of the producers'
    `message.max.bytes` and the topic's `max.message.bytes`, asked of the broker once per topic."""

    def __init__(self, kafka: KafkaSpec) -> None:
        limit = producer_config(kafka).get("message.max.bytes", PRODUCER_DEFAULT_MAX_BYTES)
        self.producer_limit = int(limit)
        self._kafka = kafka
        self._admin: AdminClient | None = None
        self._topics: dict[str, int | None] = {}
        self._lock = threading.Lock()

    def topic_limit(self, topic: str) -> int | None:
        """The topic's `max.message.bytes`; None when the broker does not say (then only the producer's
        limit is checked, and the broker's refusal, if any, fails the write)."""
        with self._lock:
            if topic not in self._topics:
                self._topics[topic] = self._describe(topic)
            return self._topics[topic]

    def limit(self, topic: str) -> int:
        topic_limit = self.topic_limit(topic)
        return self.producer_limit if topic_limit is None else min(self.producer_limit, topic_limit)

    def describe(self, topic: str) -> str:
        """The limit of `topic` and where it comes from, for an error message."""
        return (
            f"topic {topic} max.message.bytes={self.topic_limit(topic) or 'unknown'}, "
            f"producer message.max.bytes={self.producer_limit}"
        )

    def _describe(self, topic: str) -> int | None:
        if self._admin is None:
            self._admin = admin_client(self._kafka)
        admin = self._admin
        resource = ConfigResource("topic", topic)
        try:
            (future,) = admin.describe_configs([resource], request_timeout=30).values()
            entry = future.result(timeout=30).get("max.message.bytes")
        except Exception as error:  # not allowed to describe, or a broker that does not say
            log.warning(
                "cannot read max.message.bytes of topic %s (%s): checking the producer's limit only",
                topic,
                error,
            )
            return None
        return None if entry is None or entry.value is None else int(entry.value)
