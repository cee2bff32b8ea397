"""Everything committed to one topic partition, read in steps: `catch_up()` reads what was added since.

noida-db answers an empty fetch at once, so a consumer left assigned to a caught-up partition keeps the
broker busy. `TopicLog` assigns the partition only while it reads up to the high watermark it saw, then
unassigns: a long-running reader that polls costs one ListOffsets request per look. `read_committed`,
so a record counts once its transaction is committed; offsets are the records' own (transaction markers
and aborted records leave holes).

A hole of two offsets or more is an aborted transaction (a committed one leaves its marker alone). After
one, noida-db hides the same producer's later records from every read that begins past the abort marker
(CONTRIBUTING.md, Known broker defects), so the log reads again from the start of the first such hole,
which covers the marker, at most every REREAD_SECONDS: it sees what a consumer of Kafka would.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import cast

from confluent_kafka import Consumer, TopicPartition

from bridge_job.journal.reading import holes

READ_PATIENCE = 2.0  # seconds without a record below the watermark: an open transaction holds them back
REREAD_SECONDS = 2.0


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
        self.first_hole: int | None = None  # where the first run of two offsets without a record began
        self._read_again = 0.0  # when the log last read again from `first_hole`
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
        start = self.position
        if self.first_hole is not None and time.monotonic() - self._read_again >= REREAD_SECONDS:
            start, self._read_again = self.first_hole, time.monotonic()
        if high <= start:
            return []
        known = {r.offset for r in self.records}
        new: list[LoggedRecord] = []
        read: list[int] = []  # the offsets of the records read
        reached = start  # how far the read got, markers included
        self._consumer.assign([TopicPartition(self.topic, self.partition.partition, start)])
        give_up = time.monotonic() + READ_PATIENCE
        try:
            while reached < high and time.monotonic() < give_up:
                messages = self._consumer.consume(10_000, timeout=0.1)
                if messages:
                    give_up = time.monotonic() + READ_PATIENCE
                for message in messages:
                    offset = message.offset()
                    if message.error() is not None or offset is None:
                        continue
                    read.append(offset)
                    reached = max(reached, offset + 1)
                    if offset not in known:
                        headers = cast(list[tuple[str, bytes]], message.headers() or [])
                        _, timestamp = message.timestamp()
                        new.append(LoggedRecord(offset, timestamp, message.key(), tuple(headers)))
                for tp in self._consumer.position([self.partition]):
                    if tp.offset >= 0:  # past transaction markers and aborted records too
                        reached = max(reached, tp.offset)
        finally:
            self._consumer.unassign()
        found = holes(start, reached, read)  # the egress's own count of them
        if found and (self.first_hole is None or found[0][0] < self.first_hole):
            self.first_hole = found[0][0]
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
