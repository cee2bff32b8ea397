"""The bridge's own topics as the job finds them, or creates them when the bridge says so
(kafka.createJournalTopic): the journal, and the pending requests of routing/pending.py."""

from __future__ import annotations

from collections.abc import Callable

from bridge_job.config import JobConfig
from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats.journal import JournalTopicSpec, journal_topic
from bridge_job.kafka.topics import TopicAdmin

TopicSpec = Callable[[int], JournalTopicSpec]  # the topic to create, for a cluster of so many brokers


def ensure_journal_topic(config: JobConfig, admin: TopicAdmin | None = None) -> int:
    """The journal's partition count; creates the topic first when the spec asks for it."""
    partitions = config.bridge.kafka.journal_partitions
    topic = config.journal_topic
    spec: TopicSpec = lambda brokers: journal_topic(topic, partitions, brokers)  # noqa: E731
    return ensure_topic(config, topic, spec, "journal", admin)


def ensure_topic(
    config: JobConfig, topic: str, spec_for: TopicSpec, what: str, admin: TopicAdmin | None = None
) -> int:
    """`topic`'s partition count; creates it first when it is missing and the spec asks for it. `admin`:
    the job's start's, which has listed the topics already."""
    kafka = config.bridge.kafka
    admin = admin or TopicAdmin(kafka)
    if admin.partitions(topic) is None and kafka.create_journal_topic:
        spec = spec_for(admin.brokers())
        admin.create(topic, spec.partitions, spec.replication_factor, spec.config, what)
    found = admin.partitions(topic)
    if found is None:
        raise BridgeStopped(f"{what} topic {topic} does not exist: create it or set kafka.createJournalTopic")
    return found
