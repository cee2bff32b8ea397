"""A warm standby's Python workers: started with the job's modules imported, and kept so while it waits.

Spark runs each task of a Python data source in a Python worker that a worker daemon forks and the next
task reuses, and plans a query's reads in another such worker when its first batch runs. Starting those
and importing the job's modules was most of what a takeover waited for once its queries had started
(spark/gate.py). A warm standby therefore reads a small Python data source of its own before it holds
the lease (`WarmUpSource`): its read is planned and run by the same kinds of workers as the queries',
one task per worker its queries run at once (an RDD's workers belong to another daemon, which the reads
never use). Spark stops a worker left idle for a minute, so the read runs again every `REWARM_SECONDS`
while the standby waits. Only a head start: a failure is logged, and the queries start their workers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

# What the queries' read planning imports, imported with this module where it is planned.
from bridge_job.egress.source import EgressSource  # noqa: F401
from bridge_job.ingress.source import IngressSource  # noqa: F401
from bridge_job.nats_service.source import NatsSource  # noqa: F401
from bridge_job.supervision.stopping import stop_reason

log = logging.getLogger("jmsbridge.job")

REWARM_SECONDS = 45.0  # within Spark's minute for an idle worker (PythonWorkerFactory)


class WarmWorkers:
    """`workers` Python workers of Spark's SQL kind, with the tasks' modules imported, until `stop`."""

    def __init__(self, spark: Any, workers: int) -> None:
        self._spark = spark
        self._workers = max(workers, 1)
        spark.dataSource.register(WarmUpSource)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._keep, name="jmsbridge-warm-workers", daemon=True)

    def start(self) -> None:
        """Warm them now, then again and again in the background."""
        self._warm()
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def _keep(self) -> None:
        while not self._stopped.wait(REWARM_SECONDS):
            self._warm()

    def _warm(self) -> None:
        try:
            reader = self._spark.read.format(WarmUpSource.name())
            reader.option("tasks", str(self._workers)).load().collect()
        except Exception as error:
            if not self._stopped.is_set():
                log.warning("standby: could not warm up Spark's Python workers: %s", stop_reason(error))


class WarmUpSource(DataSource):
    """`spark.read.format("jmsbridge-warm-up").option("tasks", N)`: N tasks, each importing what the
    queries' tasks import, side by side."""

    @classmethod
    def name(cls) -> str:
        return "jmsbridge-warm-up"

    def schema(self) -> str:
        return "task int"

    def reader(self, schema: StructType) -> DataSourceReader:
        return _WarmUpReader(int(self.options.get("tasks", "1")))


class _WarmUpReader(DataSourceReader):
    def __init__(self, tasks: int) -> None:
        self.tasks = tasks

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(task) for task in range(self.tasks)]

    def read(self, partition: InputPartition) -> Iterator[tuple[int]]:
        import bridge_job.egress.interval
        import bridge_job.ingress.interval
        import bridge_job.nats_service.interval  # noqa: F401  (the micro-batch tasks' modules come with them)

        yield (int(partition.value),)
