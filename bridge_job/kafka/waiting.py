"""Waiting out a Kafka that does not answer: a window to come back in, then one clean hard stop.

A bridge and its Kafka are often started together (a cluster boots, a chart installs both), and a running
Kafka restarts (a rolling upgrade, a network blip): neither is a failure yet. A call that fails for want of
an answer is asked again, with a growing pause (1, 2, 4 ... at most `MAX_PAUSE_SECONDS`), for
`kafka.startupTimeoutSeconds`; after that the job stops with one `jmsbridge stopped:` line that names the
bootstrap servers, what it was doing and the last cause (exit status 2). An answer that no retry changes
(authentication or authorization refused) stops it at once. The wait logs one line per pause, not one
per librdkafka retry.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import KafkaException

from bridge_job.config import KafkaSpec
from bridge_job.errors import BridgeStopped
from bridge_job.kafka.clients import is_hard

log = logging.getLogger("jmsbridge.job")

FIRST_PAUSE_SECONDS = 1.0
MAX_PAUSE_SECONDS = 15.0

T = TypeVar("T")


def patiently(
    call: Callable[[float], T],
    kafka: KafkaSpec,
    what: str | None,
    clock: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
    ask_seconds: float = 30.0,
) -> T:
    """`call(timeout)`'s answer, asked again while Kafka does not answer, for `kafka.startupTimeoutSeconds`.

    `timeout` is how long one attempt may take: at most `ask_seconds`, never past the window."""
    window = kafka.startup_timeout_seconds
    deadline = clock() + window
    wait = FIRST_PAUSE_SECONDS
    while True:
        left = deadline - clock()
        try:
            return call(max(1.0, min(ask_seconds, left)))
        except KafkaException as error:
            cause = error.args[0].str() if error.args and hasattr(error.args[0], "str") else str(error)
            if error.args and is_hard(error.args[0]):
                raise BridgeStopped(
                    f"Kafka at {kafka.bootstrap_servers} refused the bridge: {cause}"
                ) from None
        left = deadline - clock()
        if left <= 0:
            raise BridgeStopped(
                f"Kafka at {kafka.bootstrap_servers} did not answer within {window} s "
                f"(kafka.startupTimeoutSeconds){'' if what is None else ' while ' + what}: {cause}; check "
                "bootstrapServers and that "
                "Kafka is up"
            )
        log.warning(
            "Kafka at %s does not answer%s (%s); asking again for %.0f s",
            kafka.bootstrap_servers,
            "" if what is None else f" while {what}",
            cause,
            left,
        )
        pause(min(wait, left))
        wait = min(wait * 2, MAX_PAUSE_SECONDS)
