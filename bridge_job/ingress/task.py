"""One ingress task: a Kafka topic partition's offset range, from read to JMS send, in one process.

Spark plans the ranges and checkpoints them (ingress/source.py); a task:

1. reads its range (kafka/reading.py);
2. routes and converts each record (ingress/converting.py) under the soft-failure policies; `fail`
   raises `BridgeStopped` before anything of the range is sent;
3. writes the dead letters of step 2 to Kafka and waits for their acknowledgement;
4. sends the messages in offset order in transacted JMS sessions of `COMMIT_EVERY` messages; a message
   the provider refuses is a soft failure (`SendFailed`) whose dead letter is acknowledged before its
   chunk commits; so is the pending entry of each request to a `messageId` service, written under the
   JMSMessageID the send assigned (routing/pending.py): the service sees the request only after its entry
   is in Kafka. A chunk whose commit fails leaves entries no answer will name; they expire;
5. returns once the last chunk is committed, so Spark commits the batch after every message is
   delivered. A crash before that sends the range again: duplicates, never a loss, each duplicate
   carrying the same `_AMQ_DUPL_ID`.

A lost JMS connection or a failed commit (a broker restart, a failover) drops the connection, backs off
and carries on from the first chunk not committed on a new one, for up to `spec.outages.patienceSeconds`;
then the bridge stops.

Nothing here imports Spark: a task runs the same in a test process as in a Spark Python worker, where the
JMS client's JVM starts with the worker's first task and the connection is kept for the next ones.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import astuple, dataclass, field

from bridge_job.config import JobConfig, ingress_group
from bridge_job.config.loading import PerConfig
from bridge_job.faults.outages import Outage, patiently
from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats import KafkaRecord
from bridge_job.ingress.converting import (
    Ingress,
    IngressAction,
    IngressOutcome,
    IngressRecord,
    KafkaSource,
)
from bridge_job.jms import JmsConnection, JmsError, JmsProducer
from bridge_job.jms.connection import process_client_id
from bridge_job.jms.errors import duplicate_rejected, refusal_of_one_message
from bridge_job.jms.link import JMS_HINT, JmsLink
from bridge_job.jms.settings import jms_classpath, jms_credentials, jms_tls_stores
from bridge_job.kafka.clients import producer_config
from bridge_job.kafka.reading import consumer_for, read_range, stall_for
from bridge_job.kafka.reading import consumer_settings as kafka_consumer_settings
from bridge_job.kafka.registry import schema_registry
from bridge_job.kafka.writing import Addressed, write_at_least_once
from bridge_job.message import JmsMessage
from bridge_job.routing.failures import SoftFailure, SoftFailureReason
from bridge_job.routing.pending import PendingRequest, pending_record
from bridge_job.spark import latency

log = logging.getLogger("jmsbridge.ingress")


@dataclass
class IngressSummary:
    """What one task did with its range: the one row it hands back to Spark."""

    topic: str
    partition: int
    start: int
    end: int
    records: int = 0
    sent: int = 0
    dead_lettered: int = 0
    skipped: int = 0
    loops: int = 0  # records this bridge took from the destination they would go to
    retries: int = 0  # sends of a range again after a JMS failure
    latency_ms: int = 0  # record timestamp -> JMS commit, summed over the sent records
    max_latency_ms: int = 0
    started_ms: int = 0
    ended_ms: int = 0
    latency_buckets: list[int] = field(default_factory=latency.no_latencies)  # of latency_ms, per record

    def row(self) -> tuple[int | str | list[int], ...]:
        return astuple(self)

    def add(self, other: IngressSummary) -> None:
        """`other`'s counts added to these (one range of a real-time interval)."""
        for name in ADDED:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.max_latency_ms = max(self.max_latency_ms, other.max_latency_ms)
        self.latency_buckets = latency.added(self.latency_buckets, other.latency_buckets)


ADDED = ("records", "sent", "dead_lettered", "skipped", "loops", "retries", "latency_ms")


SUMMARY_SCHEMA = (
    "topic STRING, partition INT, start BIGINT, end BIGINT, records BIGINT, sent BIGINT, "
    "dead_lettered BIGINT, skipped BIGINT, loops BIGINT, retries BIGINT, latency_ms BIGINT, "
    "max_latency_ms BIGINT, started_ms BIGINT, ended_ms BIGINT, latency_buckets ARRAY<BIGINT>"
)

_ingresses = PerConfig(lambda config: Ingress(config, schema_registry(config)))
_links: dict[str, JmsLink] = {}  # per bridge id, for this process's tasks
# Messages per JMS transaction: a consumer sees a range's messages as it goes, not when all of a large
# batch is sent; a failure resends from the first chunk not committed.
COMMIT_EVERY = 500


def current_ingress(config_path: str) -> Ingress:
    """The Ingress for the config file as it is now; rebuilt when the file changes."""
    return _ingresses.current(config_path)


def consumer_settings(config: JobConfig) -> dict[str, str | int | float | bool]:
    """The ingress group's consumer (kafka/reading.py)."""
    return kafka_consumer_settings(config.bridge.kafka, ingress_group(config.bridge_id))


def jms_link(config: JobConfig) -> JmsLink:
    """This process's connection for sending. Its client id is its own: the ingest's connection holds
    the bridge's (a provider refuses a second connection with the same client id)."""
    link = _links.get(config.bridge_id)
    if link is None:
        jms = config.bridge.jms
        credentials, classpath = jms_credentials(config), jms_classpath(config)
        stores = jms_tls_stores(config)
        client_id = process_client_id(config.bridge_id, "ingress")
        link = _links[config.bridge_id] = JmsLink(
            lambda: JmsConnection(jms, credentials, classpath, client_id, stores)
        )
    return link


# A record, its message, and for a `messageId` request what to remember of it (routing/pending.py).
Send = tuple[IngressRecord, JmsMessage, PendingRequest | None]


@dataclass
class _Plan:
    """The range's outcomes, in offset order."""

    sends: list[Send]
    dead_letters: list[Addressed]


def plan(ingress: Ingress, records: Sequence[IngressRecord], summary: IngressSummary) -> _Plan:
    sends: list[Send] = []
    dead_letters: list[Addressed] = []
    for record in records:
        outcome = ingress.handle(record)
        if outcome.action is IngressAction.SEND:
            assert outcome.message is not None
            sends.append((record, outcome.message, outcome.request))
        else:
            _count(ingress, record, outcome, summary, dead_letters)
    return _Plan(sends, dead_letters)


def _count(
    ingress: Ingress,
    record: IngressRecord,
    outcome: IngressOutcome,
    summary: IngressSummary,
    dead_letters: list[Addressed],
) -> None:
    action = outcome.action
    if action is IngressAction.LOOP:
        summary.loops += 1
        return
    failure = outcome.failure
    assert failure is not None
    if action is IngressAction.DEAD_LETTER:
        topic = ingress.config.bridge.routing.dead_letter_topic
        assert topic is not None and outcome.dead_letter is not None  # config.py requires it
        dead_letters.append((topic, outcome.dead_letter))
        summary.dead_lettered += 1
    elif action is IngressAction.SKIP:
        summary.skipped += 1
        log.warning("skipped %s: %s: %s", record.source.describe(), failure.reason.value, failure.error)
    else:
        raise BridgeStopped(
            f"{record.source.describe()}: {failure.reason.value}: {failure.error} "
            f"(route {outcome.route or '-'}, policy fail): fix the record or the routes, or set "
            "onSoftFailure to skip or deadLetter"
        )


def send_range(ingress: Ingress, planned: _Plan, summary: IngressSummary) -> None:
    """Send and commit in chunks; after a JMS failure, reconnect and carry on from the first chunk not
    committed, for up to the reconnect window."""
    config = ingress.config
    kafka = config.bridge.kafka
    patience = config.bridge.outages.patience_seconds
    if planned.dead_letters:  # acknowledged before any commit: a replay may write them again, never lose them
        write_at_least_once(producer_config(kafka), planned.dead_letters, kafka.bootstrap_servers, patience)
    link = jms_link(config)
    outage = Outage(f"JMS sends of {summary.topic}/{summary.partition}", patience, hint=JMS_HINT)
    committed = 0

    def send_the_rest(timeout: float) -> None:
        nonlocal committed
        with link.connect().producer(transacted=True) as producer:
            while committed < len(planned.sends):
                chunk = planned.sends[committed : committed + COMMIT_EVERY]
                _send_chunk(ingress, producer, chunk, summary)
                committed += len(chunk)

    def reconnect(error: BaseException) -> None:
        link.recover(None)
        summary.retries += 1

    if planned.sends:
        transient = lambda error: isinstance(error, JmsError)  # noqa: E731
        patiently(send_the_rest, outage, transient, doing="reconnecting", after_failure=reconnect)


def _send_chunk(
    ingress: Ingress,
    producer: JmsProducer,
    chunk: Sequence[Send],
    summary: IngressSummary,
) -> None:
    """One JMS transaction: the chunk's messages, the dead letters of those the provider refused and the
    pending entries of `messageId` requests under the ids they were sent with (acknowledged by Kafka
    first: no answer can come before its entry), the commit; counted into `summary` once committed."""
    counts = IngressSummary(summary.topic, summary.partition, summary.start, summary.end)
    dead_letters: list[Addressed] = []
    pending: list[Addressed] = []
    sent: list[tuple[JmsMessage, PendingRequest | None]] = []
    for record, message, request in chunk:
        try:
            message_id = producer.send(message)
            sent.append((message, request))
            counts.sent += 1
            if request is not None:
                pending.append((ingress.config.pending_topic, pending_record(message_id, request)))
        except JmsError as error:
            why = refusal_of_one_message(error, record.source.describe())
            failure = SoftFailure(SoftFailureReason.SEND_FAILED, why)
            _count(
                ingress,
                record,
                ingress.soft_failure(failure, record, ingress.route(record)),
                counts,
                dead_letters,
            )
    _acknowledged(ingress, dead_letters + pending)
    _commit(ingress, producer, sent)
    committed_ms = int(time.time() * 1000)
    summary.sent += counts.sent
    summary.dead_lettered += counts.dead_lettered
    summary.skipped += counts.skipped
    for record, _, _ in chunk:
        took = max(committed_ms - record.source.timestamp_ms, 0)
        summary.latency_ms += took
        summary.max_latency_ms = max(summary.max_latency_ms, took)
        latency.count_latency(summary.latency_buckets, took)


def _acknowledged(ingress: Ingress, entries: list[Addressed]) -> None:
    """Write `entries` (dead letters, pending entries) and return once Kafka acknowledged them."""
    if entries:
        bridge = ingress.config.bridge
        settings, servers = producer_config(bridge.kafka), bridge.kafka.bootstrap_servers
        write_at_least_once(settings, entries, servers, bridge.outages.patience_seconds)


def _commit(
    ingress: Ingress, producer: JmsProducer, sent: Sequence[tuple[JmsMessage, PendingRequest | None]]
) -> None:
    """Commit what was sent. ActiveMQ Artemis refuses a whole transaction that holds a message whose
    duplicate id (`_AMQ_DUPL_ID`, the record's) it has seen: what an earlier commit delivered though its
    answer was lost (a broker restart), or a range sent again after a crash, which may end further on.
    Sending the chunk again as it was would be refused for ever; one transaction per message instead
    lets the provider drop what it has and take the rest."""
    try:
        producer.commit()
        return
    except JmsError as error:
        if not duplicate_rejected(error):
            raise
    producer.rollback()
    delivered_before = 0
    for message, request in sent:
        message_id = producer.send(message)
        if request is not None:  # the answer will name this send's id: its entry first, as above
            _acknowledged(ingress, [(ingress.config.pending_topic, pending_record(message_id, request))])
        try:
            producer.commit()
        except JmsError as error:
            if not duplicate_rejected(error):
                raise
            producer.rollback()
            delivered_before += 1
    log.info(
        "%d of %d messages were delivered before (their duplicate ids refused); sent the rest",
        delivered_before,
        len(sent),
    )


def run(config_path: str, topic: str, partition: int, start: int, end: int) -> IngressSummary:
    summary = IngressSummary(topic, partition, start, end, started_ms=int(time.time() * 1000))
    ingress = current_ingress(config_path)
    consumer = consumer_for(consumer_settings(ingress.config))

    def record(value: KafkaRecord, offset: int, timestamp_ms: int) -> IngressRecord:
        return IngressRecord(value, KafkaSource(topic, partition, offset, timestamp_ms))

    stall = stall_for(ingress.config.bridge.outages.patience_seconds)
    records = read_range(consumer, topic, partition, start, end, record, stall)
    summary.records = len(records)
    send_range(ingress, plan(ingress, records, summary), summary)
    summary.ended_ms = int(time.time() * 1000)
    return summary
