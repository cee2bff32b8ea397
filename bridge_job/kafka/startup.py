"""Waiting for Kafka when the job starts: a window to come up in, then a clean hard stop.

A bridge and its Kafka are often started together (a cluster boots, a chart installs both), so Kafka
down at start is not yet a failure: the job asks for the cluster's metadata again, with a growing pause
(waiting.py), for the bridge's patience (`spec.outages.patienceSeconds`). After that it stops with
one `jmsbridge stopped:` line that names the bootstrap servers and the last cause (exit status 2).
An answer that no retry changes (authentication or authorization refused) stops it at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bridge_job.config import KafkaSpec
from bridge_job.kafka.clients import admin_client
from bridge_job.kafka.waiting import patiently
from bridge_job.outages import OutageListener

ASK_SECONDS = 5.0  # the longest one metadata request may take


def wait_for_kafka(
    kafka: KafkaSpec,
    patience_seconds: float,
    listener: OutageListener | None = None,
    clock: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
) -> None:
    """Return once Kafka answers; BridgeStopped when it has not within `patience_seconds`."""
    admin = admin_client(kafka)

    def ask(timeout: float) -> None:
        try:
            admin.list_topics(timeout=timeout)
        finally:
            admin.poll(0)  # hand what librdkafka logged meanwhile to Python logging

    patiently(ask, kafka, patience_seconds, "starting", clock, pause, ASK_SECONDS, listener)
