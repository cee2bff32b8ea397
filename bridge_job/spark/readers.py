"""What every flow's stream reader shares, wherever Spark runs it.

Spark plans in a Python process of its own and runs each task in a Python worker, and it carries the
reader there by pickling it. A reader pickles to its config path and its live address alone (all a task
needs to load the config it runs and to report as it goes), and it is made again where it lands, so that
each of those processes, where nothing else set logging up, logs redacted, formatted lines: without it the
waits and librdkafka's lines would reach stderr raw, unredacted and without a logger name.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path

from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit

from bridge_job.config.loading import WatchedConfig
from bridge_job.redaction import redact_process_logs
from bridge_job.spark import gate
from bridge_job.spark.intervals import INTERVAL_KEY, next_interval
from bridge_job.spark.offsets import Offsets


class FlowReader(DataSourceStreamReader):
    def __init__(self, config_path: str, live: str = "", gate_path: str = "") -> None:
        redact_process_logs()
        self.config_path = config_path
        self.live = live  # where real-time tasks report as they run (spark/live.py)
        self.gate_path = gate_path  # the driver's gate, in the planning process (spark/gate.py)
        self._watched = WatchedConfig(Path(config_path))  # what the flow's config is read from

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        """The next batch's or interval's end (`plan`), while the driver's gate is open and its tenure lasts:
        a driver that lost the lease, or stopped renewing it, has nothing more planned."""
        gate.still_open(self.gate_path)
        return self.plan(start, limit)

    @abstractmethod
    def plan(self, start: Offsets, limit: ReadLimit) -> Offsets:
        """Where the next batch or interval, which begins at `start`, ends."""

    def __getstate__(self) -> dict[str, str]:
        return {"config_path": self.config_path, "live": self.live}

    def __setstate__(self, state: dict[str, str]) -> None:
        type(self).__init__(self, state["config_path"], live=state["live"])


class IntervalReader(FlowReader):
    """A reader of a source with no offsets to plan (NATS, JMS): a batch is an interval, and its offsets
    count intervals (`INTERVAL_KEY`), so that Spark runs the next one as the last one ends."""

    def initialOffset(self) -> Offsets:
        return {INTERVAL_KEY: 0}

    def plan(self, start: Offsets, limit: ReadLimit) -> Offsets:
        return next_interval(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable()

    def commit(self, end: Offsets) -> None:
        """Nothing to do: there is no position to keep."""
