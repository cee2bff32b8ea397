"""The ingest query's source, when the ingest runs on executors: an interval of one long-running task per
ingest partition with sources (ingest/assignment.py), each journalling its sources (ingest/interval.py).

JMS has no offsets to plan: a micro-batch is an interval (spark/intervals.py) and its offsets only count
intervals (`INTERVAL_KEY`), in either `spark.mode`, as the NATS query's do. What Spark replays after a crash
is an interval count; the messages a crash left unacknowledged the broker delivers again.

The sources are the ones the query started with (`loaded`): a change of them restarts the job. The journal
epoch the tasks write with is the one the driver's open gate carries (spark/gate.py), read at each planning
rather than kept in the offsets: an interval Spark replays from the checkpoint is given the epoch of the
instance that replays it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, InputPartition
from pyspark.sql.types import StructType

from bridge_job.faults.stops import LeadershipLost
from bridge_job.formats.journal import Epoch
from bridge_job.ingest import interval
from bridge_job.ingest.assignment import ingest_partitions
from bridge_job.ingest.counts import SUMMARY_SCHEMA
from bridge_job.spark import gate
from bridge_job.spark.intervals import INTERVAL_KEY
from bridge_job.spark.offsets import Offsets
from bridge_job.spark.readers import IntervalReader


@dataclass(frozen=True)
class IngestInterval(InputPartition):
    config_path: str
    partition: int  # the ingest partition
    journal_partitions: int
    interval: int  # the query's interval count, at its start
    seconds: float
    epoch: Epoch
    live: str = ""  # where the task reports as it runs (spark/live.py)


class IngestReader(IntervalReader):
    def partitions(self, start: Offsets, end: Offsets) -> list[IngestInterval]:
        epoch = gate.epoch_at(self.gate_path)
        if epoch is None:
            raise LeadershipLost("the driver's gate carries no journal epoch: it has not taken the journal")
        config = self._watched.loaded
        count = config.bridge.kafka.journal_partitions
        seconds = float(config.bridge.spark.task_interval_seconds)
        number = start.get(INTERVAL_KEY, 0)
        return [
            IngestInterval(self.config_path, p, count, number, seconds, epoch, self.live)
            for p in ingest_partitions(config.bridge.jms.sources, count)
        ]

    def read(self, partition: InputPartition) -> Iterator[tuple[object, ...]]:
        assert isinstance(partition, IngestInterval)
        yield from interval.run(
            partition.config_path,
            partition.partition,
            partition.journal_partitions,
            partition.interval,
            partition.seconds,
            partition.epoch,
            partition.live,
        )


class IngestSource(DataSource):
    """`spark.readStream.format("jmsbridge-ingest").option("config", PATH)`: one row per ingest task."""

    @classmethod
    def name(cls) -> str:
        return "jmsbridge-ingest"

    def schema(self) -> str:
        return SUMMARY_SCHEMA

    def streamReader(self, schema: StructType) -> IngestReader:
        gate_path = self.options.get("gate", "")
        gate.wait_at(gate_path)  # a warm standby's query: held until it holds the lease
        return IngestReader(self.options["config"], self.options.get("live", ""), gate_path)
