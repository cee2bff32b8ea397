"""A compacted topic read into memory: the latest value of each key, as far as the topic was read.

`get` answers from memory and, for a key it does not hold, reads on from where it stopped up to each
partition's current end first (a tombstone removes its key), so a value written before the call is found.
The pending requests of the message-id convention are kept this way (routing/pending.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from confluent_kafka import TopicPartition

from bridge_job.config import KafkaSpec
from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats import KafkaRecord
from bridge_job.kafka.reading import consumer_for, consumer_settings, read_range
from bridge_job.kafka.waiting import patiently

CALL_TIMEOUT_SECONDS = 30.0


class CompactedTopic:
    def __init__(self, kafka: KafkaSpec, topic: str, group: str, patience_seconds: float = 300.0) -> None:
        self.topic = topic
        self.kafka = kafka
        self.patience = patience_seconds  # Kafka not answering is waited out (bridge_job/faults/outages.py)
        # Its own consumer (the client id keeps it apart from the group's other consumers of this process):
        # it is only assigned partitions and never commits.
        self.settings = consumer_settings(kafka, group) | {"client.id": f"{topic}.table"}
        self.values: dict[bytes, bytes] = {}
        self.positions: dict[int, int] = {}  # partition -> next offset to read
        self.lock = threading.Lock()

    def get(self, key: bytes) -> bytes | None:
        with self.lock:
            value = self.values.get(key)
            if value is None:
                patiently(lambda timeout: self._read_on(), self.kafka, self.patience, f"reading {self.topic}")
                value = self.values.get(key)
            return value

    def snapshot(self) -> dict[bytes, bytes]:
        with self.lock:
            return dict(self.values)

    def forget(self, keys: Iterable[bytes]) -> None:
        """Drop keys whose tombstones are written, so that they are not found again before they are read."""
        with self.lock:
            for key in keys:
                self.values.pop(key, None)

    def _read_on(self) -> None:
        consumer = consumer_for(self.settings)
        topic = consumer.list_topics(self.topic, timeout=CALL_TIMEOUT_SECONDS).topics.get(self.topic)
        if topic is None or topic.error is not None:
            raise BridgeStopped(f"cannot read topic {self.topic}: {topic.error if topic else 'not found'}")
        for partition in sorted(topic.partitions):
            low, high = consumer.get_watermark_offsets(
                TopicPartition(self.topic, partition), timeout=CALL_TIMEOUT_SECONDS
            )
            start = max(self.positions.get(partition, low), low)
            read_range(consumer, self.topic, partition, start, high, self._apply)
            self.positions[partition] = high

    def _apply(self, record: KafkaRecord, offset: int, timestamp_ms: int) -> None:
        if record.key is None:
            return
        if record.value is None:
            self.values.pop(record.key, None)
        else:
            self.values[record.key] = record.value
