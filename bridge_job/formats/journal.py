"""The journal's records: the bridge's own Kafka topic holds every JMS message it took, before routing.

A format among the others (a pure encoding, no I/O); the journal's reader, writer and topic are in journal/.

A journal record is the `native` encoding of the full JMS message (destination, every header, typed
properties, message type, body), keyed by JMSMessageID. The ingest writes it and commits the JMS
transaction only after Kafka acknowledged it, so a message is either in the journal or still on the
broker. Routing reads the journal, so a route change or a crash never loses what was taken.

Records of one JMS destination go to one journal partition (by a stable hash of the destination), which
keeps their order and puts a redelivered duplicate next to its original.

A `JournalEntry` is a record read back. Routing and the `native` format need only a few of its headers,
so an entry parses what is asked for and decodes the whole message only for the formats that rebuild it.

An epoch marker is a journal record of its own (header `jmsbridge.epoch`, no key, a JSON value): the
ingest writes one to every partition whenever its transactional journal producer starts, that is at the
start of each tenure of an active/standby pair (journal/writer.py). The producer fences every earlier one,
so the records between two markers of a partition were all written by the instance the first one names.
The egress skips markers and counts them.

The specs of the topics the job creates are here too: the journal's (`journal_topic`) and the pending
requests' (`pending_topic`), which the operator's Kafka checks read through bridge_job/contract.

Offsets are `{partition: next offset}` maps with string keys (Spark stores them as JSON).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from bridge_job.formats import FormatError, KafkaRecord, native
from bridge_job.message import HEADER_NAMES, BodyType, Destination, JmsMessage, PropertyType

JOURNAL_RETENTION_MS = 7 * 24 * 3600 * 1000
EPOCH_HEADER = "jmsbridge.epoch"


@dataclass(frozen=True)
class JournalTopicSpec:
    """The journal topic as the operator or the job creates it."""

    name: str
    partitions: int
    replication_factor: int
    config: Mapping[str, str]


def journal_topic(name: str, partitions: int, broker_count: int) -> JournalTopicSpec:
    """Three replicas with two in sync where the cluster has three brokers, else what it has.

    The journal holds every JMS message between its JMS commit and its delivery: losing a record there
    loses a message, so `acks=all` must mean two copies where that is possible, and an unclean leader
    election (which truncates acknowledged records) is refused. `delete` (never `compact`): the journal is
    replayed by offset, and compaction would drop records that share a key. Seven days of retention let
    the Spark side catch up after a long outage.
    """
    replicas = max(1, min(3, broker_count))
    return JournalTopicSpec(
        name=name,
        partitions=partitions,
        replication_factor=replicas,
        config={
            "cleanup.policy": "delete",
            "retention.ms": str(JOURNAL_RETENTION_MS),
            "min.insync.replicas": "2" if replicas >= 3 else "1",
            "unclean.leader.election.enable": "false",
        },
    )


def pending_topic(name: str, broker_count: int) -> JournalTopicSpec:
    """The topic of requests waiting for a `messageId` answer (routing/pending.py). Replicated as the
    journal is (an entry lost is an answer lost), compacted (the latest entry of a message id is all that
    counts; tombstones remove answered ones), one partition (a few small records per request in flight;
    the egress reads it whole on a restart)."""
    replicas = max(1, min(3, broker_count))
    return JournalTopicSpec(
        name=name,
        partitions=1,
        replication_factor=replicas,
        config={
            "cleanup.policy": "compact",
            "min.insync.replicas": "2" if replicas >= 3 else "1",
            "unclean.leader.election.enable": "false",
        },
    )


def journal_record(message: JmsMessage) -> KafkaRecord:
    record = native.encode(message)
    key = None if message.message_id is None else message.message_id.encode()
    return KafkaRecord(value=record.value, headers=record.headers, key=key)


@dataclass(frozen=True)
class Epoch:
    """Who writes the journal from now on: the instance, its lease holder identity, and its tenure."""

    holder: str  # the Lease's holderIdentity, `<instance>/<pod>`
    instance: str
    tenure_start: str | None = None  # the Lease's acquireTime (None: no lease, a single instance)
    transitions: int | None = None  # the Lease's leaseTransitions when this tenure began

    def marker(self, written: str) -> KafkaRecord:
        """The marker record; `written` is when this producer started (RFC 3339)."""
        value = {
            "holder": self.holder,
            "instance": self.instance,
            "tenureStart": self.tenure_start,
            "transitions": self.transitions,
            "written": written,
        }
        return KafkaRecord(value=json.dumps(value).encode(), headers=[(EPOCH_HEADER, self.holder.encode())])


def message_id_of(key: bytes | None) -> str | None:
    """The JMS message id a journal record's key holds (None: an epoch marker)."""
    return None if key is None else bytes(key).decode("utf-8", "replace")


@dataclass(slots=True)
class JournalEntry:
    """A journal record at its place in the journal, read lazily: nothing is parsed until asked for."""

    record: KafkaRecord
    partition: int = 0
    offset: int = 0
    timestamp_ms: int = 0
    _texts: dict[str, bytes] | None = field(default=None, init=False, repr=False, compare=False)
    _message: JmsMessage | None = field(default=None, init=False, repr=False, compare=False)
    _destination: Destination | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def of(cls, message: JmsMessage, partition: int = 0, offset: int = 0) -> JournalEntry:
        """The entry the ingest would write for a message (for tests and tools)."""
        return cls(journal_record(message), partition, offset)

    def _headers(self) -> dict[str, bytes]:
        if self._texts is None:
            self._texts = {name: value for name, value in self.record.headers}  # the last one wins
        return self._texts

    def _text(self, header: str) -> str | None:
        raw = self._headers().get(header)
        return None if raw is None else native.header_text(header, raw)

    def text(self, name: str) -> str | None:
        """A JMS header (JMSType, ...) or property by its JMS name, as the text `native` wrote for it."""
        return self._text(native.PREFIX + name)

    def property_text(self, name: str) -> str | None:
        return None if name in HEADER_NAMES else self.text(name)

    def value_type(self, name: str) -> PropertyType:
        """The JMS type of a header or property value (what `jmsbridge.types` records for properties)."""
        if name == "JMSRedelivered":
            return PropertyType.BOOLEAN
        if name in HEADER_NAMES:
            return PropertyType.STRING
        types = self._text(native.TYPES_HEADER)
        return native.parse_types(types).get(name, PropertyType.STRING) if types else PropertyType.STRING

    @property
    def destination(self) -> Destination:
        """Parsed once: routing asks for it for every route it tries."""
        if self._destination is None:
            text = self.text("JMSDestination")
            if text is None:
                raise FormatError(f"header {native.PREFIX}JMSDestination: missing")
            try:
                self._destination = Destination.parse(text)
            except ValueError as error:
                raise FormatError(f"header {native.PREFIX}JMSDestination: {error}") from None
        return self._destination

    @property
    def message_id(self) -> str | None:
        return message_id_of(self.record.key)

    @property
    def is_marker(self) -> bool:
        """An epoch marker: no JMS message, egress skips it."""
        return EPOCH_HEADER in self._headers()

    @property
    def redelivered(self) -> bool:
        return self._headers().get(native.PREFIX + "JMSRedelivered") == b"true"

    @property
    def body_type(self) -> BodyType:
        text = self._text(native.MESSAGE_TYPE_HEADER)
        if text is None:
            return BodyType.BYTES
        try:
            return BodyType(text)
        except ValueError:
            raise FormatError(
                f"header {native.MESSAGE_TYPE_HEADER}: unknown JMS message type {text!r}"
            ) from None

    def message(self) -> JmsMessage:
        """The whole JMS message; raises FormatError when the record is not a valid `native` one."""
        if self._message is None:
            self._message = native.decode(self.record)
        return self._message


def journal_partition(message: JmsMessage, partitions: int) -> int:
    return destination_partition(message.destination, partitions)


def destination_partition(destination: Destination, partitions: int) -> int:
    """The journal partition of a destination's messages (and the ingest partition of a queue source)."""
    return zlib.crc32(destination.uri().encode()) % partitions
