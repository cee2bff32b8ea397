"""What the egress and ingress sources share: planning Kafka offset ranges for Spark, one task each.

Offsets are `{key: offset}` per partition; Spark checkpoints them before a batch runs, so a replayed
batch covers the same ranges. A subclass says which partitions it reads (`watermarks`) and what a task
does with a range (`read`); the driver-side reader pickles to its config path alone, which is all a task
needs to load the config it runs.

With the `availableNow` trigger the source fixes the end offsets when the query starts
(`prepareForTriggerAvailableNow`) and Spark drains up to them in batches of the usual size.
"""

from __future__ import annotations

from abc import abstractmethod

from confluent_kafka import Consumer
from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from bridge_job.config import JobConfig
from bridge_job.kafka.waiting import patiently
from bridge_job.spark.offsets import Offsets


class RangeReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Planning in the driver, `read` in the tasks."""

    def __init__(self, config_path: str) -> None:
        self.config_path = config_path
        self._consumer: Consumer | None = None
        self._latest: Offsets | None = None  # what the last `latestOffset` saw
        self._target: Offsets | None = None  # availableNow: where to stop

    def __getstate__(self) -> dict[str, str]:
        return {"config_path": self.config_path}

    def __setstate__(self, state: dict[str, str]) -> None:
        type(self).__init__(self, state["config_path"])

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
            self._consumer = Consumer(self.consumer_settings())
        return self._consumer

    def patient_watermarks(self) -> tuple[Offsets, Offsets]:
        """The watermarks, asked again while Kafka does not answer (kafka/waiting.py): a Kafka restart
        while a batch is planned is waited out, not a stop of the query."""
        kafka = self.config.bridge.kafka
        return patiently(lambda timeout: self.watermarks(), kafka, "planning the next batch")

    def latest(self) -> tuple[Offsets, Offsets]:
        """The watermarks, remembering the high ones for `reportLatestOffset`."""
        low, high = self.patient_watermarks()
        self._latest = high
        return low, high

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
