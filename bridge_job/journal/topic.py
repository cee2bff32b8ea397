"""The journal topic as the job finds it, or creates it when the bridge says so (kafka.createJournalTopic)."""

from __future__ import annotations

from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

from bridge_job.config import JobConfig
from bridge_job.errors import BridgeStopped
from bridge_job.journal.entries import journal_topic
from bridge_job.kafka.clients import admin_client


def ensure_journal_topic(config: JobConfig) -> int:
    """The journal's partition count; creates the topic first when the spec asks for it."""
    kafka = config.bridge.kafka
    admin = admin_client(kafka)
    topic = config.journal_topic
    metadata = admin.list_topics(timeout=30)
    if topic not in metadata.topics and kafka.create_journal_topic:
        spec = journal_topic(topic, kafka.journal_partitions, len(metadata.brokers))
        new = NewTopic(topic, spec.partitions, spec.replication_factor, config=dict(spec.config))
        for future in admin.create_topics([new], operation_timeout=30).values():
            try:
                future.result(timeout=60)
            except Exception as error:  # created meanwhile by the operator is fine
                if "TOPIC_ALREADY_EXISTS" not in str(error):
                    raise BridgeStopped(f"cannot create journal topic {topic}: {error}") from None
        metadata = admin.list_topics(timeout=30)
    found = metadata.topics.get(topic)
    if found is None or found.error is not None:
        raise BridgeStopped(
            f"journal topic {topic} does not exist: create it or set kafka.createJournalTopic"
        )
    return len(found.partitions)
