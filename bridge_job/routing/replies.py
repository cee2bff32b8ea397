"""Request/reply from a Kafka requester to a JMS service, and how the answer finds its way back.

A request is a record on a kafkaToJms route with `reply`, naming its reply topic in the header
`jmsbridge.replyTopic` (one of the route's `reply.topics`). The bridge sends it to JMS with JMSReplyTo
the bridge's `jms.replyQueue` and JMSCorrelationID `<reply topic>/<correlation id>`, the correlation id
being the record's `jms.JMSCorrelationID` header, else its key, else its coordinates. A JMS service
answers as JMS services do: to JMSReplyTo, copying JMSCorrelationID. The bridge consumes the reply queue
(one of its sources) and writes each answer to the topic its JMSCorrelationID names, with the requester's
correlation id as the record key and as `jms.JMSCorrelationID`, in the `native` format, with the bridge's
signed loop mark as on every record it writes (formats/native.py, `signed`).

The reply topic travels in the correlation id, so nothing is remembered between request and reply: a
restart, a failover or a reply hours later all work. Topic names cannot hold `/`, so the split is exact.

A route with `reply.correlation: messageId` serves services that answer with the request's JMSMessageID
instead: the bridge remembers those requests in Kafka (routing/pending.py), and an answer whose
JMSCorrelationID names no reply topic is looked up there (`pending_answer`). A JMSMessageID cannot pass
for `<topic>/<id>`: it starts with `ID:`, and `:` is not a character of topic names.
"""

from __future__ import annotations

from bridge_job.config import JobConfig
from bridge_job.formats import KafkaRecord, native
from bridge_job.formats.journal import JournalEntry
from bridge_job.formats.native import ORIGIN_HEADER, signed
from bridge_job.message import Destination, DestinationKind
from bridge_job.routing.failures import SoftFailure, SoftFailureReason
from bridge_job.routing.pending import parse_pending

REPLY_TOPIC_HEADER = "jmsbridge.replyTopic"
SEPARATOR = "/"
CORRELATION_HEADER = native.PREFIX + "JMSCorrelationID"


def request_correlation(reply_topic: str, correlation_id: str) -> str:
    return f"{reply_topic}{SEPARATOR}{correlation_id}"


def reply_queue(config: JobConfig) -> Destination | None:
    name = config.bridge.jms.reply_queue
    return None if name is None else Destination(DestinationKind.QUEUE, name)


def reply_record(
    entry: JournalEntry, origin: str, allowed: dict[str, str], key: bytes
) -> tuple[str, KafkaRecord, str] | str:
    """The topic, record and allowing route of an answer on the reply queue, its origin signed with `key`;
    what is wrong with it when it is not the answer to a request from Kafka."""
    correlation = entry.text("JMSCorrelationID")
    topic, separator, requester_id = (correlation or "").partition(SEPARATOR)
    if not separator:
        return (
            f"JMSCorrelationID {correlation!r} on the reply queue names no reply topic: not the answer to "
            "a request from Kafka (the service must copy the request's JMSCorrelationID, or its route "
            "set reply.correlation: messageId)"
        )
    route = allowed.get(topic)
    if route is None:
        return f"reply topic {topic!r} is in no route's reply.topics"
    return topic, answer(entry, origin, requester_id, key), route


def answer(entry: JournalEntry, origin: str, requester_id: str, key: bytes) -> KafkaRecord:
    """The answer as the requester gets it: its correlation id as the key and as `jms.JMSCorrelationID`."""
    headers = [(k, v) for k, v in entry.record.headers if k != CORRELATION_HEADER]
    headers += [(CORRELATION_HEADER, requester_id.encode()), (ORIGIN_HEADER, origin.encode())]
    return signed(
        KafkaRecord(value=entry.record.value, headers=headers, key=requester_id.encode()), origin, key
    )


def pending_answer(
    entry: JournalEntry, origin: str, found: bytes | None, allowed: dict[str, str], key: bytes
) -> tuple[str, KafkaRecord, str] | SoftFailure:
    """The topic, record and route of the answer to a request kept pending (routing/pending.py), `found`
    its entry; the soft failure when there is none, or it expired."""
    message_id = entry.text("JMSCorrelationID")
    if found is None:
        return SoftFailure(
            SoftFailureReason.UNKNOWN_REQUEST,
            f"JMSCorrelationID {message_id!r} on the reply queue is no request's JMSMessageID that awaits "
            "an answer: answered already, swept after its deadline, or not a request from this bridge",
        )
    try:
        request = parse_pending(found)
    except ValueError as error:
        return SoftFailure(SoftFailureReason.UNKNOWN_REQUEST, f"pending request {message_id!r}: {error}")
    if request.expired(entry.timestamp_ms):
        late = entry.timestamp_ms - request.deadline_ms
        return SoftFailure(
            SoftFailureReason.REPLY_EXPIRED,
            f"the answer to request {message_id!r} came {late} ms after its deadline (route "
            f"{request.route}, reply.timeoutSeconds)",
        )
    if request.reply_topic not in allowed:
        return SoftFailure(
            SoftFailureReason.NO_ROUTE, f"reply topic {request.reply_topic!r} is in no route's reply.topics"
        )
    return request.reply_topic, answer(entry, origin, request.correlation_id, key), request.route
