"""What the ingest did, in one shape wherever it runs: a batch journalled and committed (`Journalled`), and
the counts of a partition's batches (`IngestCounts`), which are an ingest task's summary row and what the
driver's figures (supervision/telemetry.py `IngestMetrics`) are fed from, whether the ingest runs in the
driver or in tasks on executors.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import astuple, dataclass, field, fields
from typing import Any

from bridge_job.message import JmsMessage
from bridge_job.spark import latency


@dataclass(frozen=True)
class Journalled:
    """A batch of JMS messages journalled and committed, for telemetry: the messages, and how many of them
    were poison (ingest/poison.py) and went to the dead-letter topic or were skipped."""

    messages: list[JmsMessage]
    dead_lettered: int = 0
    skipped: int = 0

    @classmethod
    def of(
        cls, batch: list[JmsMessage], written: Sequence[tuple[str, Any, Any]], journal_topic: str
    ) -> Journalled:
        dead_lettered = sum(1 for topic, _, _ in written if topic != journal_topic)
        return cls(batch, dead_lettered, len(batch) - len(written))


@dataclass
class IngestCounts:
    """An ingest partition's batches: what it took off JMS and where it went, and each message's latency
    from its JMSTimestamp to its journal commit (messages without a timestamp are not counted there)."""

    received: int = 0
    journalled: int = 0
    dead_lettered: int = 0
    skipped: int = 0
    batches: int = 0
    fenced: int = 0  # 1: another instance took the journal over, and the task stopped writing
    latency_ms: int = 0  # summed
    max_latency_ms: int = 0
    latency_buckets: list[int] = field(default_factory=latency.no_latencies)

    def add(self, batch: Journalled, committed_ms: int | None = None) -> None:
        committed = int(time.time() * 1000) if committed_ms is None else committed_ms
        self.received += len(batch.messages)
        self.journalled += len(batch.messages) - batch.dead_lettered - batch.skipped
        self.dead_lettered += batch.dead_lettered
        self.skipped += batch.skipped
        self.batches += 1
        for message in batch.messages:
            if message.timestamp > 0:  # 0: the producer disabled JMSTimestamp
                took = max(committed - message.timestamp, 0)
                self.latency_ms += took
                self.max_latency_ms = max(self.max_latency_ms, took)
                latency.count_latency(self.latency_buckets, took)

    @classmethod
    def of(cls, batch: Journalled, committed_ms: int | None = None) -> IngestCounts:
        counts = cls()
        counts.add(batch, committed_ms)
        return counts

    def row(self, partition: int) -> dict[str, Any]:
        """As a live report's row (spark/live.py), named by its partition."""
        return {"partition": partition, **{f.name: getattr(self, f.name) for f in fields(self)}}

    def values(self) -> tuple[Any, ...]:
        return astuple(self)


# One row per ingest task: its partition, its counts (IngestCounts, in field order), the brokers' state as it
# saw them (ingest/health.py), where it ran and when.
SUMMARY_SCHEMA = ", ".join(
    [
        "partition BIGINT",
        *(f"{f.name} {'BIGINT' if f.type == 'int' else 'ARRAY<BIGINT>'}" for f in fields(IngestCounts)),
        "jms STRING",  # ingest/health.py: what the task found of each system
        "kafka STRING",
        "where STRING",
        "started_ms BIGINT",
        "ended_ms BIGINT",
    ]
)
