"""Topics as the job finds them: which exist and their partitions, their IDs, and creating one the bridge
owns (the journal, the pending requests) when the bridge says so (kafka.createJournalTopic).

`client` is any client of the job (a consumer or an admin client): each answers a metadata request.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bridge_job.config import KafkaSpec
from bridge_job.faults.stops import BridgeStopped
from bridge_job.kafka import refusals
from bridge_job.kafka.clients import admin_client

LEADERS_SECONDS = 30.0  # how long a topic just created may take to have a leader for every partition
NULL_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"  # what a broker without topic IDs answers
FIRST_SLICE_SECONDS = 0.5  # `TopicAdmin.listing` asks this long first, then twice as long each time


def existing_partitions(client: Any, timeout: float = 30.0) -> dict[str, list[int]]:
    """Every topic the cluster has (that answers without an error), with its partitions in order."""
    topics = client.list_topics(timeout=timeout).topics
    return {name: sorted(t.partitions) for name, t in topics.items() if t.error is None}


def partitions_of(
    client: Any, topic: str, timeout: float = 30.0, retriable_raises: bool = False
) -> list[int] | None:
    """`topic`'s partitions in order; None when it does not exist. `retriable_raises`: an error the
    cluster will get over (a leader being elected) raises KafkaException, to be asked again, instead of
    counting as missing."""
    found = client.list_topics(topic, timeout=timeout).topics.get(topic)
    if found is not None and found.error is not None and retriable_raises and found.error.retriable():
        raise KafkaException(found.error)
    if found is None or found.error is not None:
        return None
    return sorted(found.partitions)


def topic_ids(settings: Mapping[str, Any], topics: Iterable[str]) -> dict[str, str | None]:
    """Kafka's topic IDs, asked with a consumer's `settings`; None where the broker gives none (or the
    null UUID)."""
    names = sorted(set(topics))
    if not names:
        return {}
    admin = AdminClient({k: v for k, v in settings.items() if not k.startswith(("group.", "isolation."))})
    ids: dict[str, str | None] = {}
    for name, future in admin.describe_topics(TopicCollection(names)).items():
        try:
            topic_id = str(future.result(timeout=30).topic_id)
        except Exception:  # unknown topic, or a broker without the API: no ID to compare
            topic_id = None
        ids[name] = None if topic_id in (None, "None", NULL_TOPIC_ID) else topic_id
    return ids


class TopicAdmin:
    """One admin client of the job, and the cluster's topics as it last listed them: the job's start
    checks several topics with one listing."""

    def __init__(self, kafka: KafkaSpec) -> None:
        self.kafka = kafka
        self._admin = admin_client(kafka)
        self._listing: Any = None

    def listing(self, timeout: float = 30.0, again: bool = False) -> Any:
        """The cluster's metadata (topics and brokers), asked once unless `again`.

        Asked in slices that double, within `timeout`: librdkafka hands a refused login or TLS handshake
        only to `poll`, while the request waits out its timeout as it would with the broker down. Between
        slices the refusal is heard (`refusals`) and the slice's error goes to the caller, which stops
        the bridge at once (kafka.waiting). A slow broker costs a request asked again, never an answer:
        each slice is longer than the last and the last takes what is left."""
        if self._listing is not None and not again:
            return self._listing
        deadline = time.monotonic() + timeout
        piece = FIRST_SLICE_SECONDS
        while True:
            left = deadline - time.monotonic()
            ask = left if left < 2 * piece else piece
            try:
                self._listing = self._admin.list_topics(timeout=max(ask, 0.0))
            except KafkaException:
                if self._refused() or ask >= left:  # polled either way: the caller reads the refusal
                    raise
                piece *= 2
                continue
            self._admin.poll(0)  # hand what librdkafka logged meanwhile to Python logging
            return self._listing

    def _refused(self) -> bool:
        """Whether a client of this process heard the bridge's login or TLS refused, once this one's
        events (what librdkafka logged meanwhile) went to Python."""
        self._admin.poll(0)
        return refusals.seen() is not None

    def missing(self, topics: Iterable[str]) -> list[str]:
        """Which of `topics` the cluster does not have."""
        listed = self.listing().topics
        return [t for t in topics if t not in listed or listed[t].error is not None]

    def brokers(self) -> int:
        return len(self.listing().brokers)

    def create(
        self, topic: str, partitions: int, replication_factor: int, config: Mapping[str, str], what: str
    ) -> None:
        """Create `topic` (one created meanwhile, by the operator, is fine) and wait until every partition
        has a leader: a new topic's partitions answer LEADER_NOT_AVAILABLE for a moment, which a reader
        would take for a missing topic."""
        new = NewTopic(topic, partitions, replication_factor, config=dict(config))
        for future in self._admin.create_topics([new], operation_timeout=30).values():
            try:
                future.result(timeout=60)
            except Exception as error:
                if "TOPIC_ALREADY_EXISTS" not in str(error):
                    raise BridgeStopped(f"cannot create {what} topic {topic}: {error}") from None
        deadline = time.monotonic() + LEADERS_SECONDS
        while True:
            metadata = self._admin.list_topics(topic, timeout=30)
            found = metadata.topics.get(topic)
            answered = found.partitions.values() if found is not None and found.error is None else []
            led = answered and all(p.leader >= 0 and p.error is None for p in answered)
            if led or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        self._listing = None  # listed again when next asked

    def partitions(self, topic: str) -> int | None:
        """How many partitions `topic` has; None when it does not exist."""
        found = self.listing().topics.get(topic)
        return None if found is None or found.error is not None else len(found.partitions)
