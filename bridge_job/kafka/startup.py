"""Waiting for Kafka when the job starts: a window to come up in, then a clean hard stop.

A bridge and its Kafka are often started together (a cluster boots, a chart installs both), so Kafka
down at start is not yet a failure: the job asks for the cluster's metadata again, with a growing pause
(1, 2, 4 ... at most `MAX_PAUSE_SECONDS`), for `kafka.startupTimeoutSeconds`. After that it stops with
one `jmsbridge stopped:` line that names the bootstrap servers and the last cause (exit status 2).
An answer that no retry changes (authentication or authorization refused) stops it at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import KafkaException

from bridge_job.config import KafkaSpec
from bridge_job.errors import BridgeStopped
from bridge_job.kafka.clients import admin_client, is_hard

log = logging.getLogger("jmsbridge.job")

FIRST_PAUSE_SECONDS = 1.0
MAX_PAUSE_SECONDS = 15.0
ASK_SECONDS = 5.0  # the longest one metadata request may take


def wait_for_kafka(
    kafka: KafkaSpec,
    clock: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
) -> None:
    """Return once Kafka answers; BridgeStopped when it has not within `kafka.startupTimeoutSeconds`."""
    window = kafka.startup_timeout_seconds
    deadline = clock() + window
    admin = admin_client(kafka)
    wait = FIRST_PAUSE_SECONDS
    while True:
        left = deadline - clock()
        try:
            admin.list_topics(timeout=max(1.0, min(ASK_SECONDS, left)))
            admin.poll(0)  # hand what librdkafka logged meanwhile to Python logging
            return
        except KafkaException as error:
            admin.poll(0)
            cause = error.args[0].str() if error.args else str(error)
            if error.args and is_hard(error.args[0]):
                raise BridgeStopped(
                    f"Kafka at {kafka.bootstrap_servers} refused the bridge: {cause}"
                ) from None
        left = deadline - clock()
        if left <= 0:
            raise BridgeStopped(
                f"Kafka at {kafka.bootstrap_servers} did not answer within {window} s "
                f"(kafka.startupTimeoutSeconds): {cause}; check bootstrapServers and that Kafka is up"
            )
        log.warning(
            "Kafka at %s does not answer (%s); asking again for %.0f s", kafka.bootstrap_servers, cause, left
        )
        pause(min(wait, left))
        wait = min(wait * 2, MAX_PAUSE_SECONDS)
