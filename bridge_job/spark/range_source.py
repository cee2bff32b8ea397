"""What the egress and ingress sources share: planning Kafka offset ranges for Spark, one task each.

Offsets are `{key: offset}` per partition; Spark checkpoints them before a batch runs, so a replayed
batch covers the same ranges. A subclass says which partitions it reads (`watermarks`) and what a task
does with a range (`read`); the reader reaches the tasks as spark/readers.py says.

With the `availableNow` trigger the source fixes the end offsets when the query starts
(`prepareForTriggerAvailableNow`) and Spark drains up to them in batches of the usual size.
"""

from __future__ import annotations

import logging
import time
from abc import abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pyspark.sql.datasource import DataSource, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from bridge_job.config import JobConfig
from bridge_job.faults.stops import BridgeStopped
from bridge_job.kafka.reading import Consumer, new_consumer
from bridge_job.kafka.waiting import patiently
from bridge_job.spark import binding, gate
from bridge_job.spark.intervals import MICRO_BATCH, REAL_TIME
from bridge_job.spark.offsets import Offsets
from bridge_job.spark.readers import FlowReader

log = logging.getLogger("jmsbridge.checkpoint")


@dataclass(frozen=True)
class PartitionRange(InputPartition):
    """One task's range of one Kafka partition (the journal's for the egress, a read topic's for the
    ingress), and the config it reads."""

    topic: str
    partition: int
    start: int
    end: int
    config_path: str
    seconds: float = 0.0  # realTime: the task runs this long from `start`, with no end (spark/intervals.py)
    live: str = ""  # realTime: where the task reports as it runs (spark/live.py)


class Summary(Protocol):
    """What a task or an interval of a flow hands back: one row of its query."""

    def row(self) -> tuple[Any, ...]: ...


class RangeReader(FlowReader, SupportsTriggerAvailableNow):
    """Planning in the driver, `read` in the tasks: a flow's reader says how a task moves a range
    (`RANGE`: config path, topic, partition, start, end) and how a real-time one follows its partition
    (`INTERVAL`: config path, topic, partition, start, seconds, live address)."""

    RANGE: ClassVar[Callable[[str, str, int, int, int], Summary]]
    INTERVAL: ClassVar[Callable[[str, str, int, int, float, str], Summary]]

    def __init__(
        self,
        config_path: str,
        checkpoint: str | None = None,
        mode: str = MICRO_BATCH,
        live: str = "",
        gate_path: str = "",
    ) -> None:
        super().__init__(config_path, live, gate_path)
        self.checkpoint = Path(checkpoint) if checkpoint else None
        self.mode = mode
        self._checked = False  # the checkpoint's binding, checked when the query starts
        self._fingerprinted = 0.0  # when the binding's records were last taken
        self._bound: set[tuple[str, int] | None] = set()  # the partitions with a record in the binding
        self._consumer: Consumer | None = None
        self._latest: Offsets | None = None  # what the last `latestOffset` saw
        self._low: Offsets | None = None  # the low watermarks it saw
        self._target: Offsets | None = None  # availableNow: where to stop

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, PartitionRange)
        p = partition
        if p.seconds:
            yield type(self).INTERVAL(p.config_path, p.topic, p.partition, p.start, p.seconds, p.live).row()
        else:
            yield type(self).RANGE(p.config_path, p.topic, p.partition, p.start, p.end).row()

    @abstractmethod
    def locate(self, key: str) -> tuple[str, int] | None:
        """The topic and partition of an offsets key; None for a key that is no partition."""

    def check_binding(self, start: Offsets) -> None:
        """Once per query start: the checkpoint still indexes the topics it was taken on
        (spark/binding.py); a checkpoint without a binding yet gets one."""
        if self._checked or self.checkpoint is None:
            return
        settings = self.consumer_settings()
        found = binding.verify(
            self.consumer, settings, self.checkpoint, self.locate, committed=self.real_time
        )
        for mismatch in found:
            if not (mismatch.lost and self.config.bridge.spark.on_data_loss == "skip"):  # else: planning
                raise BridgeStopped(binding.describe(mismatch, self.config.bridge_id, self.checkpoint))
        self._checked = True

    def refresh_binding(self, start: Offsets, low: Offsets) -> None:
        """Every planning: the binding takes one record of each partition the bridge has passed, when it
        has none yet for it, and again at most once a minute, so that retention seldom passes them."""
        if self.checkpoint is None:
            return
        passed = {self.locate(k) for k, o in start.items() if k in low and o > low[k]}
        if passed <= self._bound and time.monotonic() - self._fingerprinted < binding.REFRESH_SECONDS:
            return
        settings = self.consumer_settings()
        # Every partition the source reads (`low`), also those it has not passed yet: their topic's id is
        # bound from the first planning on. A topic recreated before the bridge passed a record of it
        # is told apart by its id alone, since Kafka deletes a deleted topic's committed offsets too.
        taken = binding.fingerprint_all(self.consumer, settings, {**low, **start}, self.locate)
        binding.with_known_ids(taken, binding.load_binding(self.checkpoint) or {})
        binding.save_binding(self.checkpoint, taken)
        self._bound = {(t, p) for t, b in taken.items() for p in b.records}
        self._fingerprinted = time.monotonic()

    def check_range(self, start: Offsets, low: Offsets, high: Offsets) -> None:
        """Every planning: the offsets lie within each partition's [low, high] watermarks."""
        for topic, offsets in sorted(binding.by_topic(start, self.locate).items()):
            keys = {self.locate(k): k for k in high}
            lows = {w[1]: low[k] for w, k in keys.items() if w is not None and w[0] == topic}
            highs = {w[1]: high[k] for w, k in keys.items() if w is not None and w[0] == topic}
            if not highs:
                continue  # not read now (a route removed): it keeps its position
            mismatch = binding.out_of_range(topic, offsets, lows, highs)
            if mismatch is not None and mismatch.lost and self.config.bridge.spark.on_data_loss == "skip":
                # Counted in the checkpoint, where the driver takes it into its metric and report.
                if self.checkpoint is None or binding.count_lost(self.checkpoint, topic, offsets, lows):
                    log.warning(
                        "topic %s: %d records left before the bridge read them (%s), skipped "
                        "(spark.onDataLoss: skip)",
                        topic,
                        mismatch.lost,
                        mismatch.expected,
                    )
                continue
            if mismatch is not None:
                where = self.checkpoint or Path("(no checkpoint)")
                raise BridgeStopped(binding.describe(mismatch, self.config.bridge_id, where))

    def start_offsets(self) -> Offsets | None:
        """Where a reset (`jmsbridge reset-checkpoint`) said the query begins, if it did."""
        return binding.load_start(self.checkpoint) if self.checkpoint is not None else None

    @property
    @abstractmethod
    def config(self) -> JobConfig: ...

    @abstractmethod
    def consumer_settings(self) -> dict[str, str | int | float | bool]:
        """The settings of the driver's consumer, which reads metadata and watermarks only."""

    @abstractmethod
    def watermarks(self) -> tuple[Offsets, Offsets]:
        """Low and high watermarks of every partition the source reads."""

    @property
    def consumer(self) -> Consumer:
        if self._consumer is None:
            self._consumer = new_consumer(self.consumer_settings())
        return self._consumer

    def patient_watermarks(self) -> tuple[Offsets, Offsets]:
        """The watermarks, asked again while Kafka does not answer (kafka/waiting.py): a Kafka restart
        while a batch is planned is waited out, not a stop of the query."""
        bridge = self.config.bridge
        patience = bridge.outages.patience_seconds
        return patiently(lambda timeout: self.watermarks(), bridge.kafka, patience, "planning the next batch")

    def latest(self) -> tuple[Offsets, Offsets]:
        """The watermarks, remembering the high ones for `reportLatestOffset`."""
        low, high = self.patient_watermarks()
        self._latest, self._low = high, low
        return low, high

    @property
    def real_time(self) -> bool:
        """Long-running tasks (spark/intervals.py); `availableNow` drains in bounded batches."""
        return self.mode == REAL_TIME and self._target is None

    @property
    def task_seconds(self) -> float:
        return float(self.config.bridge.spark.task_interval_seconds)

    def progress(self, start: Offsets) -> Offsets:
        """Real-time mode: where each partition of `start` stands, what its task committed in Kafka where
        that is further (Spark's offsets say where the last interval began)."""
        bridge = self.config.bridge
        return patiently(
            lambda timeout: binding.with_committed(self.consumer_settings(), start, self.locate, timeout),
            bridge.kafka,
            bridge.outages.patience_seconds,
            "asking how far the tasks got",
        )

    def floor(self, key: str, offset: int) -> int:
        """A range's start, past records that left the topic (`spark.onDataLoss: skip`)."""
        if self._low is None:
            self._low = self.patient_watermarks()[0]
        return max(offset, self._low.get(key, offset))

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.config.bridge.spark.max_records_per_batch)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.patient_watermarks()[1]

    def reportLatestOffset(self) -> Offsets:
        """For the lag in progress reports: what `latestOffset` saw, without asking again."""
        return self._latest if self._latest is not None else self.patient_watermarks()[1]

    def commit(self, end: Offsets) -> None:
        """Nothing to do: the checkpoint is the source of truth for progress, not Kafka."""

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


class RangeSource(DataSource):
    """`spark.readStream.format(FORMAT).option("config", PATH)` (options `checkpoint`, `mode`, `gate`,
    `live`):
    a source whose tasks hand back one summary row each. A subclass names its format, row schema and
    reader."""

    FORMAT: ClassVar[str]
    SCHEMA: ClassVar[str]
    READER: ClassVar[type[RangeReader]]

    @classmethod
    def name(cls) -> str:
        return cls.FORMAT

    def schema(self) -> str:
        return self.SCHEMA

    def streamReader(self, schema: StructType) -> RangeReader:
        options = self.options
        gate_path = options.get("gate", "")
        gate.wait_at(gate_path)  # a warm standby's query: held until it holds the lease
        mode, live = options.get("mode", MICRO_BATCH), options.get("live", "")
        return self.READER(options["config"], options.get("checkpoint"), mode, live, gate_path)
