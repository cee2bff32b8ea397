"""Destination topics, checked before the bridge starts and after every route change; the pending-request
topic, created then when the bridge says so."""

from __future__ import annotations

from bridge_job.config import JobConfig, is_topic_pattern
from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats.journal import pending_topic
from bridge_job.journal.topic import ensure_topic
from bridge_job.kafka.topics import TopicAdmin


def destination_topics(config: JobConfig) -> list[str]:
    """The topics the routes write and read by name, reply topics included (not a kafkaToJms pattern)."""
    named = {t for r in config.routes if (t := r.spec.kafka_topic) is not None and not is_topic_pattern(t)}
    topics = named | set(config.reply_topics)
    if config.bridge.routing.dead_letter_topic:
        topics.add(config.bridge.routing.dead_letter_topic)
    return sorted(topics)


def check_topics(config: JobConfig, admin: TopicAdmin | None = None) -> None:
    """Stop before starting when a destination topic is missing: a hard failure (docs/egress.md, Failures).
    `admin`: the job's start's, which has listed the topics already."""
    topics = destination_topics(config)
    if not topics:
        return
    missing = (admin or TopicAdmin(config.bridge.kafka)).missing(topics)
    if missing:
        raise BridgeStopped(
            f"topic{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"{'do' if len(missing) > 1 else 'does'} not exist: create them or fix the routes"
        )


def ensure_pending_topic(config: JobConfig, admin: TopicAdmin | None = None) -> None:
    """For `reply.correlation: messageId` routes: their topic, created with kafka.createJournalTopic."""
    if config.keeps_pending_requests:
        name = config.pending_topic
        ensure_topic(config, name, lambda brokers: pending_topic(name, brokers), "pending-request", admin)
