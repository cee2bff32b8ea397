"""Reading a Kafka topic from "now" on, without spinning on a caught-up topic.

A broker that answers an empty fetch at once (some Kafka-protocol brokers ignore `fetch.wait.max.ms`)
makes a consumer of a caught-up topic keep about a core busy, since librdkafka sends the next fetch as
soon as the previous one returns (Apache Kafka holds it open until records come). So that a benchmark
measures the same on any broker, `TopicWatch` holds no assignment while caught up and looks at
the partitions' high watermarks (one ListOffsets request each) every `backoff` seconds; when one has
records beyond the position read so far, every partition is assigned at its position, read up to the
watermarks seen, and unassigned again. A record is seen late by at most `backoff` plus two round trips.

The positions start at the high watermarks taken when the `TopicWatch` is made: make it before the load
starts and it cannot miss the first records. `read_committed`: with exactly-once delivery a record
counts once its transaction is committed.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from confluent_kafka import Consumer, Message, TopicPartition

# Called with the records of one read and the wall-clock time they were seen; returns True when done.
OnRecords = Callable[[list[Message], float], bool]

STALL_SECONDS = 0.2  # no record within this long after assign(): nothing readable below the watermark
STALL_RETRY_SECONDS = 1.0


class TopicWatch:
    def __init__(self, bootstrap: str, topic: str, backoff: float = 0.005) -> None:
        self.topic = topic
        self.backoff = backoff
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed",
            }
        )
        metadata = self.consumer.list_topics(topic, timeout=30)
        found = metadata.topics.get(topic)
        if found is None or found.error is not None or not found.partitions:
            raise RuntimeError(f"topic {topic} not found: {found.error if found else 'no metadata'}")
        self.partitions = sorted(found.partitions)
        self.positions = {p: self._high_watermark(p) for p in self.partitions}
        self.start_offsets = dict(self.positions)
        self.watermark_queries = 0
        self.reads = 0
        self.stalls = 0

    def _high_watermark(self, partition: int) -> int:
        _, high = self.consumer.get_watermark_offsets(
            TopicPartition(self.topic, partition), timeout=10, cached=False
        )
        return int(high)

    def run(self, on_records: OnRecords, timeout: float, check: Callable[[], None] = lambda: None) -> bool:
        """Read until `on_records` returns True (then True) or `timeout` seconds pass (then False);
        `check` is called between reads (to raise when a process the records come from died)."""
        deadline = time.monotonic() + timeout
        # partition -> (a watermark that reading could not reach, when to try it again anyway)
        stalled: dict[int, tuple[int, float]] = {}
        while time.monotonic() < deadline:
            check()
            targets: dict[int, int] = {}
            now = time.monotonic()
            for p in self.partitions:
                high = self._high_watermark(p)
                self.watermark_queries += 1
                stalled_at, retry = stalled.get(p, (-1, 0.0))
                if high > self.positions[p] and (high != stalled_at or now > retry):
                    targets[p] = high
            if not targets:
                time.sleep(self.backoff)
                continue
            # assign() starts fetching at once; resume() after pause() waits up to a second for
            # librdkafka's broker thread to wake up.
            assignment = [TopicPartition(self.topic, p, self.positions[p]) for p in self.partitions]
            self.consumer.assign(assignment)
            self.reads += 1
            try:
                while any(self.positions[p] < high for p, high in targets.items()):
                    first = self._poll(assignment, targets)
                    if first is None:
                        if all(self.positions[p] >= high for p, high in targets.items()):
                            break  # only transaction markers were left
                        # Nothing readable below the watermark (an open or aborted transaction, or a
                        # slow first fetch): look again once the watermark moves, or in a second.
                        retry = time.monotonic() + STALL_RETRY_SECONDS
                        stalled.update({p: (h, retry) for p, h in targets.items() if self.positions[p] < h})
                        self.stalls += 1
                        break
                    messages = [first, *self.consumer.consume(10_000, timeout=0)]
                    seen = time.time()
                    records = []
                    for m in messages:
                        if m.error() is not None:
                            continue
                        records.append(m)
                        p, offset = m.partition(), m.offset()
                        if p is not None and offset is not None:
                            self.positions[p] = max(self.positions[p], offset + 1)
                    self._update_positions(assignment)
                    if on_records(records, seen):
                        return True
            finally:
                self.consumer.unassign()
        return False

    def _poll(self, assignment: list[TopicPartition], targets: dict[int, int]) -> Message | None:
        """The next record, or None once every target is reached or none came within STALL_SECONDS."""
        give_up = time.monotonic() + STALL_SECONDS
        while True:
            message = self.consumer.poll(0.01)
            if message is not None:
                return message
            self._update_positions(assignment)
            if all(self.positions[p] >= high for p, high in targets.items()) or time.monotonic() > give_up:
                return None

    def _update_positions(self, assignment: list[TopicPartition]) -> None:
        for tp in self.consumer.position(assignment):
            if tp.offset >= 0:  # past transaction markers too
                self.positions[tp.partition] = max(self.positions[tp.partition], tp.offset)

    def close(self) -> None:
        self.consumer.close()
