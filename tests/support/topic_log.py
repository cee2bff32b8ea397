"""Everything committed to one topic partition, read in steps: `catch_up()` reads what was added since.

noida-db answers an empty fetch at once, so a consumer left assigned to a caught-up partition keeps the
broker busy. `TopicLog` assigns the partition only while it reads up to the high watermark it saw, then
unassigns: a long-running reader that polls costs one ListOffsets request per look. `read_committed`,
so a record counts once its transaction is committed; offsets are the records' own (transaction markers
and aborted records leave holes).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import cast

from confluent_kafka import Consumer, TopicPartition

READ_PATIENCE = 2.0  # seconds without a record below the watermark: an open transaction holds them back


@dataclass(frozen=True)
class LoggedRecord:
    offset: int
    timestamp_ms: int  # the producer's CreateTime
    key: bytes | None
    headers: tuple[tuple[str, bytes], ...]

    def header(self, name: str) -> bytes | None:
        return dict(self.headers).get(name)


class TopicLog:
    def __init__(self, bootstrap: str, topic: str, partition: int = 0) -> None:
        self.topic = topic
        self.partition = TopicPartition(topic, partition)
        self.records: list[LoggedRecord] = []
        self.position = 0
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"topic-log-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )

    def high_watermark(self) -> int:
        _, high = self._consumer.get_watermark_offsets(self.partition, timeout=10, cached=False)
        return int(high)

    def catch_up(self) -> list[LoggedRecord]:
        """Read up to the current high watermark, or as far as committed records reach (until none came
        for READ_PATIENCE); the new records."""
        high = self.high_watermark()
        first = len(self.records)
        if high <= self.position:
            return []
        self._consumer.assign([TopicPartition(self.topic, self.partition.partition, self.position)])
        give_up = time.monotonic() + READ_PATIENCE
        try:
            while self.position < high and time.monotonic() < give_up:
                messages = self._consumer.consume(10_000, timeout=0.1)
                if messages:
                    give_up = time.monotonic() + READ_PATIENCE
                for message in messages:
                    offset = message.offset()
                    if message.error() is not None or offset is None:
                        continue
                    headers = cast(list[tuple[str, bytes]], message.headers() or [])
                    _, timestamp = message.timestamp()
                    self.records.append(LoggedRecord(offset, timestamp, message.key(), tuple(headers)))
                    self.position = max(self.position, offset + 1)
                for tp in self._consumer.position([self.partition]):
                    if tp.offset >= 0:  # past transaction markers and aborted records too
                        self.position = max(self.position, tp.offset)
        finally:
            self._consumer.unassign()
        return self.records[first:]

    def since(self, offset: int) -> list[LoggedRecord]:
        """The records read so far at or after `offset`."""
        return [r for r in self.records if r.offset >= offset]

    def last_before(self, offset: int) -> LoggedRecord | None:
        return next((r for r in reversed(self.records) if r.offset < offset), None)

    def close(self) -> None:
        self._consumer.close()
