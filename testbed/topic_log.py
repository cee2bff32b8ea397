"""Everything committed to one topic partition, read in steps: `catch_up()` reads what was added since.

`TopicLog` assigns the partition only while it reads up to the high watermark it saw, then unassigns: a
long-running reader that polls costs one ListOffsets request per look, and holds no fetch open between
looks. `read_committed`, so a record counts once its transaction is committed; offsets are the records'
own (transaction markers and aborted records leave holes). A `read_committed` consumer's high watermark
is the last stable offset: an open transaction holds back nothing below it, so a look reads up to it.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import cast

from confluent_kafka import Consumer, TopicPartition

# How long a look may take to read up to the watermark: only a slow or unreachable Kafka makes it wait (it
# used to give up after 2 s without a record, about what a first fetch takes on a loaded machine).
READ_SECONDS = 30.0


@dataclass(frozen=True)
class LoggedRecord:
    offset: int
    timestamp_ms: int  # the producer's CreateTime
    key: bytes | None
    headers: tuple[tuple[str, bytes], ...]

    def header(self, name: str) -> bytes | None:
        return dict(self.headers).get(name)


class TopicLog:
    def __init__(self, bootstrap: str, topic: str, partition: int = 0, position: int = 0) -> None:
        self.topic = topic
        self.partition = TopicPartition(topic, partition)
        self.records: list[LoggedRecord] = []
        self.position = position  # where the first `catch_up` begins
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
        """Read up to the current high watermark (the last stable offset), for at most READ_SECONDS; the
        new records."""
        high = self.high_watermark()
        start = self.position
        if high <= start:
            return []
        new: list[LoggedRecord] = []
        reached = start  # how far the read got, markers included
        self._consumer.assign([TopicPartition(self.topic, self.partition.partition, start)])
        give_up = time.monotonic() + READ_SECONDS
        try:
            while reached < high and time.monotonic() < give_up:
                messages = self._consumer.consume(10_000, timeout=0.1)
                for message in messages:
                    offset = message.offset()
                    if message.error() is not None or offset is None:
                        continue
                    reached = max(reached, offset + 1)
                    headers = cast(list[tuple[str, bytes]], message.headers() or [])
                    _, timestamp = message.timestamp()
                    new.append(LoggedRecord(offset, timestamp, message.key(), tuple(headers)))
                for tp in self._consumer.position([self.partition]):
                    if tp.offset >= 0:  # past transaction markers and aborted records too
                        reached = max(reached, tp.offset)
        finally:
            self._consumer.unassign()
        self.position = max(self.position, reached)
        if new:
            self.records = sorted(self.records + new, key=lambda r: r.offset)
        return sorted(new, key=lambda r: r.offset)

    def since(self, offset: int) -> list[LoggedRecord]:
        """The records read so far at or after `offset`."""
        return [r for r in self.records if r.offset >= offset]

    def last_before(self, offset: int) -> LoggedRecord | None:
        return next((r for r in reversed(self.records) if r.offset < offset), None)

    def close(self) -> None:
        self._consumer.close()
