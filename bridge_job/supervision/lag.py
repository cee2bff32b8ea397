"""Live lag in real-time mode: how far each partition's committed progress is behind its end, every few
seconds.

A real-time task commits its progress in Kafka after each range (kafka/following.py), and its summary row
reaches the driver only when its interval ends. So the driver reads the lag where it is true now: the
journal reader group's and the ingress group's committed offsets against the partitions' ends, every
`INTERVAL_SECONDS`, into `jmsbridge_journal_lag_records` and `jmsbridge_ingress_lag_records`. Kafka not
answering leaves the gauges as they were: the outage is the probe's to report (kafka/probe.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from bridge_job.config import JobConfig
from bridge_job.ingress import task as ingress_task
from bridge_job.ingress.source import source_partitions
from bridge_job.journal.reading import consumer_settings as journal_settings
from bridge_job.kafka.reading import lag_of, new_consumer
from bridge_job.kafka.topics import partitions_of

log = logging.getLogger("jmsbridge.telemetry")

INTERVAL_SECONDS = 5.0
ASK_SECONDS = 5.0

Lag = dict[tuple[str, int], int]  # (topic, partition) -> records between committed progress and the end


class LagWatch:
    """Reads both directions' lag in the background and hands it to `journal` and `ingress`."""

    def __init__(
        self,
        config: Callable[[], JobConfig],
        journal: Callable[[int], None],
        ingress: Callable[[Lag], None],
        interval: float = INTERVAL_SECONDS,
    ) -> None:
        self._config = config
        self._journal, self._ingress = journal, ingress
        current = config()
        self._journal_consumer = new_consumer(journal_settings(current))
        self._ingress_consumer = new_consumer(ingress_task.consumer_settings(current))
        self._interval = interval
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lag-watch", daemon=True)
        self._thread.start()

    def read(self) -> None:
        config = self._config()
        journal = config.journal_topic
        partitions = partitions_of(self._journal_consumer, journal, ASK_SECONDS) or []
        self._journal(
            sum(lag_of(self._journal_consumer, [(journal, p) for p in partitions], ASK_SECONDS).values())
        )
        sources = source_partitions(self._ingress_consumer, config, timeout=ASK_SECONDS)
        self._ingress(lag_of(self._ingress_consumer, sources, ASK_SECONDS))

    def _run(self) -> None:
        while not self._stopping.wait(self._interval):
            try:
                self.read()
            except Exception:  # telemetry never stops the bridge
                log.debug("cannot read the lag", exc_info=True)

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=2 * ASK_SECONDS + 1)
        self._journal_consumer.close()
        self._ingress_consumer.close()
