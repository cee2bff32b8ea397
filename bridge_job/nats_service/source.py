"""The NATS query's source: one task per interval, which hosts the process's NATS service.

NATS has no offsets to plan: a micro-batch is an interval (spark/intervals.py) and its offsets only count
intervals (`INTERVAL_KEY`), so that Spark runs the next one as the last one ends. The query runs so in
either `spark.mode`: a subscription is no bounded range, and a task of `spark.taskIntervalSeconds` is how
the service is kept (nats_service/interval.py). Nothing is replayed after a crash: core NATS is at most
once (docs/nats.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, InputPartition
from pyspark.sql.types import StructType

from bridge_job.nats_service import interval
from bridge_job.spark import gate
from bridge_job.spark.offsets import Offsets
from bridge_job.spark.readers import IntervalReader


@dataclass(frozen=True)
class NatsInterval(InputPartition):
    config_path: str
    seconds: float
    live: str = ""  # where the task reports as it runs (spark/live.py)


class NatsReader(IntervalReader):
    def partitions(self, start: Offsets, end: Offsets) -> list[NatsInterval]:
        seconds = float(self._watched.current().bridge.spark.task_interval_seconds)
        return [NatsInterval(self.config_path, seconds, self.live)]

    def read(self, partition: InputPartition) -> Iterator[tuple[int | str, ...]]:
        assert isinstance(partition, NatsInterval)
        yield from interval.run(partition.config_path, partition.seconds, partition.live)


class NatsSource(DataSource):
    """`spark.readStream.format("jmsbridge-nats").option("config", PATH)`: one row per route and task."""

    @classmethod
    def name(cls) -> str:
        return "jmsbridge-nats"

    def schema(self) -> str:
        return interval.SUMMARY_SCHEMA

    def streamReader(self, schema: StructType) -> NatsReader:
        gate_path = self.options.get("gate", "")
        gate.wait_at(gate_path)  # a warm standby's query: held until it holds the lease
        return NatsReader(self.options["config"], self.options.get("live", ""), gate_path)
