"""The bridge's own topics as the job finds them, or creates them when the bridge says so
(kafka.createJournalTopic): the journal, and the pending requests of routing/pending.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bridge_job.config import JobConfig
from bridge_job.errors import BridgeStopped
from bridge_job.journal.entries import JournalTopicSpec, journal_topic
from bridge_job.kafka.clients import admin_client

TopicSpec = Callable[[int], JournalTopicSpec]  # the topic to create, for a cluster of so many brokers
LEADERS_SECONDS = 30.0  # how long a topic just created may take to have a leader for every partition


def _led(admin: AdminClient, topic: str) -> Any:
    """The cluster's metadata once `topic`, just created, has a leader for every partition (a new topic's
    partitions answer LEADER_NOT_AVAILABLE for a moment, which a reader would take for a missing topic);
    the last answer when that takes longer than LEADERS_SECONDS."""
    deadline = time.monotonic() + LEADERS_SECONDS
    while True:
        metadata = admin.list_topics(topic, timeout=30)
        found = metadata.topics.get(topic)
        partitions = found.partitions.values() if found is not None and found.error is None else []
        if partitions and all(p.leader >= 0 and p.error is None for p in partitions):
            return metadata
        if time.monotonic() >= deadline:
            return metadata
        time.sleep(0.1)


def ensure_journal_topic(config: JobConfig) -> int:
    """The journal's partition count; creates the topic first when the spec asks for it."""
    partitions = config.bridge.kafka.journal_partitions
    topic = config.journal_topic
    return ensure_topic(config, topic, lambda brokers: journal_topic(topic, partitions, brokers), "journal")


def ensure_topic(config: JobConfig, topic: str, spec_for: TopicSpec, what: str) -> int:
    """`topic`'s partition count; creates it first when it is missing and the spec asks for it."""
    kafka = config.bridge.kafka
    admin = admin_client(kafka)
    metadata = admin.list_topics(timeout=30)
    if topic not in metadata.topics and kafka.create_journal_topic:
        spec = spec_for(len(metadata.brokers))
        new = NewTopic(topic, spec.partitions, spec.replication_factor, config=dict(spec.config))
        for future in admin.create_topics([new], operation_timeout=30).values():
            try:
                future.result(timeout=60)
            except Exception as error:  # created meanwhile by the operator is fine
                if "TOPIC_ALREADY_EXISTS" not in str(error):
                    raise BridgeStopped(f"cannot create {what} topic {topic}: {error}") from None
        metadata = _led(admin, topic)
    found = metadata.topics.get(topic)
    if found is None or found.error is not None:
        raise BridgeStopped(f"{what} topic {topic} does not exist: create it or set kafka.createJournalTopic")
    return len(found.partitions)
