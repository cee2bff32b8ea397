"""Waiting out a Kafka that does not answer (bridge_job/faults/outages.py: one patience for every system).

A bridge and its Kafka are often started together (a cluster boots, a chart installs both), and a running
Kafka restarts (a rolling upgrade, a network blip): neither is a failure yet. A call that fails for want of
an answer is asked again with a growing pause for `spec.outages.patienceSeconds`; after that the job stops
with one `jmsbridge stopped:` line that names the bootstrap servers, what it was doing and the last cause
(exit status 2). An answer that no retry changes (authentication or authorization refused) stops it at
once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import KafkaException

from bridge_job.config import JobConfig, KafkaSpec
from bridge_job.faults.outages import Outage, OutageListener
from bridge_job.faults.outages import patiently as patiently_with
from bridge_job.faults.stops import BridgeStopped
from bridge_job.kafka import refusals
from bridge_job.kafka.clients import is_hard

T = TypeVar("T")


def cause(error: BaseException | str) -> str:
    """What librdkafka said, without the KafkaError wrapping."""
    first: Any = error.args[0] if isinstance(error, BaseException) and error.args else None
    return str(first.str()) if hasattr(first, "str") else str(error)


def stop_if_refused(kafka: KafkaSpec) -> None:
    """BridgeStopped when a Kafka client of this process saw the bridge's login or TLS refused: a failure
    that looks like an outage to the call that waited, and that no wait mends."""
    found = refusals.seen()
    if found is not None:
        raise BridgeStopped(refusals.what_to_fix(found, kafka))


def transient(error: BaseException, kafka: KafkaSpec) -> bool:
    """A Kafka error that waiting may change: anything but a refusal, which stops the bridge at once."""
    if not isinstance(error, KafkaException):
        return False
    stop_if_refused(kafka)
    if error.args and is_hard(error.args[0]):
        raise BridgeStopped(
            f"Kafka at {kafka.bootstrap_servers} refused the bridge: {cause(error)}"
        ) from None
    return True


def kafka_outage(
    kafka: KafkaSpec,
    patience_seconds: float,
    what: str | None,
    clock: Callable[[], float] = time.monotonic,
    listener: OutageListener | None = None,
) -> Outage:
    doing = "" if what is None else f" while {what}"
    hint = "check bootstrapServers and that Kafka is up"
    where = f"Kafka at {kafka.bootstrap_servers}{doing}"
    return Outage(where, patience_seconds, clock, listener, hint, cause)


def patiently(
    call: Callable[[float], T],
    kafka: KafkaSpec,
    patience_seconds: float,
    what: str | None,
    clock: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
    ask_seconds: float = 30.0,
    listener: OutageListener | None = None,
) -> T:
    """`call(timeout)`'s answer, asked again while Kafka does not answer, for `patience_seconds`."""
    outage = kafka_outage(kafka, patience_seconds, what, clock, listener)

    def waitable(error: BaseException) -> bool:
        return transient(error, kafka)

    return patiently_with(call, outage, waitable, pause, ask_seconds)


def asking(config: JobConfig, what: str, call: Callable[[], T]) -> T:
    """`call()`, a step that talks to Kafka with timeouts of its own, asked again while Kafka does not
    answer, for the bridge's patience."""
    bridge = config.bridge
    return patiently(lambda timeout: call(), bridge.kafka, bridge.outages.patience_seconds, what)
