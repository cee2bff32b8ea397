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
from bridge_job.faults.outages import OutageListener
from bridge_job.kafka.topics import TopicAdmin
from bridge_job.kafka.waiting import patiently

ASK_SECONDS = 5.0  # the longest one metadata request may take


def wait_for_kafka(
    kafka: KafkaSpec,
    patience_seconds: float,
    listener: OutageListener | None = None,
    clock: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
) -> TopicAdmin:
    """Once Kafka answers: the admin client that asked, with the cluster's topics as it listed them.
    BridgeStopped when it has not answered within `patience_seconds`."""
    admin = TopicAdmin(kafka)

    def ask(timeout: float) -> None:
        admin.listing(timeout, again=True)

    patiently(ask, kafka, patience_seconds, "starting", clock, pause, ASK_SECONDS, listener)
    return admin
