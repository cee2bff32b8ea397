"""Request/reply from a Kafka requester to a JMS service, and how the answer finds its way back.

A request is a record on a kafkaToJms route with `reply`, naming its reply topic in the header
`jmsbridge.replyTopic` (one of the route's `reply.topics`). The bridge sends it to JMS with JMSReplyTo
the bridge's `jms.replyQueue` and JMSCorrelationID `<reply topic>/<correlation id>`, the correlation id
being the record's `jms.JMSCorrelationID` header, else its key, else its coordinates. A JMS service
answers as JMS services do: to JMSReplyTo, copying JMSCorrelationID. The bridge consumes the reply queue
(one of its sources) and writes each answer to the topic its JMSCorrelationID names, with the requester's
correlation id as the record key and as `jms.JMSCorrelationID`, in the `native` format.

The reply topic travels in the correlation id, so nothing is remembered between request and reply: a
restart, a failover or a reply hours later all work. Topic names cannot hold `/`, so the split is exact.
"""

from __future__ import annotations

from bridge_job.config import Direction, JobConfig
from bridge_job.formats import KafkaRecord, native
from bridge_job.formats.native import ORIGIN_HEADER
from bridge_job.journal.entries import JournalEntry
from bridge_job.message import Destination, DestinationKind

REPLY_TOPIC_HEADER = "jmsbridge.replyTopic"
SEPARATOR = "/"
CORRELATION_HEADER = native.PREFIX + "JMSCorrelationID"


def request_correlation(reply_topic: str, correlation_id: str) -> str:
    return f"{reply_topic}{SEPARATOR}{correlation_id}"


def reply_queue(config: JobConfig) -> Destination | None:
    name = config.bridge.jms.reply_queue
    return None if name is None else Destination(DestinationKind.QUEUE, name)


def reply_topics(config: JobConfig) -> dict[str, str]:
    """Every topic a reply may go to, with the route that allows it."""
    allowed: dict[str, str] = {}
    for route in config.routes_for(Direction.KAFKA_TO_JMS):
        for topic in route.spec.reply.topics if route.spec.reply is not None else ():
            allowed.setdefault(topic, route.name)
    return allowed


def reply_record(
    entry: JournalEntry, origin: str, allowed: dict[str, str]
) -> tuple[str, KafkaRecord, str] | str:
    """The topic, record and allowing route of an answer on the reply queue; what is wrong with it when it
    is not the answer to a request from Kafka."""
    correlation = entry.text("JMSCorrelationID")
    topic, separator, requester_id = (correlation or "").partition(SEPARATOR)
    if not separator:
        return (
            f"JMSCorrelationID {correlation!r} on the reply queue names no reply topic: not the answer to "
            "a request from Kafka (the service must copy the request's JMSCorrelationID)"
        )
    route = allowed.get(topic)
    if route is None:
        return f"reply topic {topic!r} is in no route's reply.topics"
    headers = [(k, v) for k, v in entry.record.headers if k != CORRELATION_HEADER]
    headers += [(CORRELATION_HEADER, requester_id.encode()), (ORIGIN_HEADER, origin.encode())]
    return topic, KafkaRecord(value=entry.record.value, headers=headers, key=requester_id.encode()), route
