"""The routing stage of the Spark query: journal rows in, Kafka-bound rows out (`mapInArrow`).

Each row of the output says what happens to one message: `publish` to a route's topic, `deadLetter`,
or `skip`. The `fail` policy raises `BridgeStopped` here, which fails the batch and stops the job
before anything of that batch is committed. The routes come from the config file, re-read when it
changes, so a route edit applies from the next micro-batch on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from bridge_job.converting import Action, Egress, Outcome, SoftFailure, SoftFailureReason, SourceCoordinates
from bridge_job.formats import FormatError, KafkaRecord, native
from bridge_job.header_blob import pack_headers, unpack_headers
from bridge_job.kafka_clients import BridgeStopped
from bridge_job.loading import WatchedConfig

log = logging.getLogger("jmsbridge.routing")

SCHEMA = (
    "topic STRING, key BINARY, value BINARY, headers BINARY, "
    "action STRING, route STRING, reason STRING, latency_ns BIGINT"
)
ARROW_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", pa.binary()),
        ("action", pa.string()),
        ("route", pa.string()),
        ("reason", pa.string()),
        ("latency_ns", pa.int64()),
    ]
)

_watched: dict[str, WatchedConfig] = {}
_egress: dict[str, tuple[int, Egress]] = {}


def egress_for(config_path: str) -> Egress:
    """The Egress for the current config; one per Python worker, rebuilt when the file changes."""
    watched = _watched.setdefault(config_path, WatchedConfig(Path(config_path)))
    config = watched.current()
    cached = _egress.get(config_path)
    if cached is None or cached[0] != id(config):
        cached = (id(config), Egress(config))
        _egress[config_path] = cached
    return cached[1]


def handle_row(egress: Egress, row: dict[str, Any], journal_topic: str) -> Outcome:
    original = KafkaRecord(value=row["value"], headers=unpack_headers(row["headers"]), key=row["key"])
    destination = original.header(native.PREFIX + "JMSDestination")
    source = SourceCoordinates(
        destination=destination.decode("utf-8", "replace") if destination else "(unknown)",
        message_id=row["message_id"],
        journal_topic=journal_topic,
        journal_partition=row["partition"],
        journal_offset=row["offset"],
    )
    try:
        message = native.decode(original)
    except FormatError as error:
        failure = SoftFailure(SoftFailureReason.MALFORMED_JOURNAL_RECORD, str(error))
        outcome = egress.soft_failure(failure, original, source, None)
    else:
        outcome = egress.handle(message, original, source)
    if outcome.action is Action.FAIL:
        assert outcome.failure is not None
        raise BridgeStopped(
            f"{source.describe()}: {outcome.failure.reason.value}: {outcome.failure.error} "
            f"(route {outcome.route or '-'}, policy fail): fix the message or the routes, or set "
            "onSoftFailure to skip or deadLetter"
        )
    if outcome.action is Action.SKIP:
        assert outcome.failure is not None
        log.warning(
            "skipped %s: %s: %s", source.describe(), outcome.failure.reason.value, outcome.failure.error
        )
    return outcome


def route_batches(config_path: str) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def stage(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        egress = egress_for(config_path)
        journal_topic = egress.config.journal_topic
        for batch in batches:
            out: dict[str, list[Any]] = {name: [] for name in ARROW_SCHEMA.names}
            for row in batch.to_pylist():
                began = time.perf_counter_ns()
                outcome = handle_row(egress, row, journal_topic)
                record = outcome.record
                out["topic"].append(outcome.topic)
                out["key"].append(None if record is None else record.key)
                out["value"].append(None if record is None else record.value)
                out["headers"].append(b"" if record is None else pack_headers(record.headers))
                out["action"].append(outcome.action.value)
                out["route"].append(outcome.route)
                out["reason"].append(None if outcome.failure is None else outcome.failure.reason.value)
                out["latency_ns"].append(time.perf_counter_ns() - began)
            yield pa.RecordBatch.from_pydict(out, schema=ARROW_SCHEMA)

    return stage
