"""The driver's eye on Kafka, for the health report: one metadata request every `INTERVAL_SECONDS`.

The calls that move records wait an outage out themselves (bridge_job/faults/outages.py), but some run
where the health report cannot hear them (Spark's Python workers, the driver's planning worker) and an
idle bridge makes none. The probe makes `KafkaConnected` say what is true now, whether records flow or
not. It never stops anything: stopping is for the callers whose patience ran out.
"""

from __future__ import annotations

import threading

from confluent_kafka import KafkaException

from bridge_job.config import KafkaSpec
from bridge_job.faults.outages import OutageListener
from bridge_job.kafka.clients import admin_client
from bridge_job.kafka.waiting import cause

INTERVAL_SECONDS = 5.0
ASK_SECONDS = 5.0


class KafkaProbe:
    """Asks Kafka for a topic's metadata in the background and tells `listener` whether it answered."""

    def __init__(
        self, kafka: KafkaSpec, topic: str, listener: OutageListener, interval: float = INTERVAL_SECONDS
    ) -> None:
        self.what = f"Kafka at {kafka.bootstrap_servers}"
        self._interval = interval
        self._admin = admin_client(kafka)
        self._topic = topic
        self._listener = listener
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kafka-probe", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                self._admin.list_topics(self._topic, timeout=min(ASK_SECONDS, self._interval))
                self._listener.back(self.what)
            except KafkaException as error:
                self._listener.failing(self.what, cause(error))
            finally:
                self._admin.poll(0)  # hand what librdkafka logged meanwhile to Python logging
            if self._stopping.wait(self._interval):
                return

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=ASK_SECONDS + 1)
