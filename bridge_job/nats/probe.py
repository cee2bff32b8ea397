"""The driver's eye on NATS, for the health report: one round trip to the servers every `INTERVAL_SECONDS`.

As kafka/probe.py for Kafka: the NATS service waits an outage out where the health report cannot hear it
(a Spark Python worker), so the probe makes `NatsConnected` say what is true now. It never stops anything.
"""

from __future__ import annotations

import os
import threading

from bridge_job.config import NatsSpec
from bridge_job.faults.outages import OutageListener
from bridge_job.nats.link import FAILURES, NatsLink

INTERVAL_SECONDS = 5.0
ASK_SECONDS = 5.0


class NatsProbe:
    """Connects to NATS in the background and tells `listener` whether the servers answer."""

    def __init__(self, spec: NatsSpec, listener: OutageListener, interval: float = INTERVAL_SECONDS) -> None:
        self._link = NatsLink(spec, f"jmsbridge-probe-{os.getpid()}", patience_seconds=0)
        self.what = self._link.where
        self._interval = interval
        self._listener = listener
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nats-probe", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        connected = False
        while True:
            try:
                if not connected:
                    self._link.try_connect()
                    connected = True
                self._link.ping(ASK_SECONDS)
                self._listener.back(self.what)
            except FAILURES as error:
                self._listener.failing(self.what, error)
            if self._stopping.wait(self._interval):
                return

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=ASK_SECONDS + 1)
        self._link.close()
