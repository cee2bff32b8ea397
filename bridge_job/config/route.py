"""A JmsBridgeRoute's spec: which messages it takes, where they go, how they are keyed and converted."""

from __future__ import annotations

import enum
from typing import Annotated, Literal, Self

from pydantic import ConfigDict, Field, model_validator

from bridge_job.config.schema import (
    ADDRESS_PATTERN,
    NAME_PATTERN,
    TOPICS_PATTERN,
    CamelModel,
    DestinationName,
    Direction,
    Format,
    Identifier,
    Rule,
    SoftFailurePolicy,
    TopicName,
    cel_rules,
    exactly_one,
    exactly_one_rule,
)


class BridgeRef(CamelModel):
    name: Annotated[str, Field(pattern=NAME_PATTERN)]


class RouteMatch(CamelModel):
    """Which messages a route takes. Every given condition must hold; an empty match takes everything."""

    address: Annotated[str, Field(pattern=ADDRESS_PATTERN)] | None = Field(
        default=None,
        description="JMS destination name (jmsToKafka) or Kafka topic (kafkaToJms); `*` matches one "
        "dot-separated segment, `>` the rest.",
    )
    destination_type: Literal["queue", "topic"] | None = None
    headers: dict[Identifier, str] = Field(
        default_factory=dict,
        description="JMS header or property values the message must carry (compared as text).",
    )


class KeySpec(CamelModel):
    """Where the Kafka key comes from: a JMS header (JMSCorrelationID, ...) or a property."""

    model_config = ConfigDict(json_schema_extra=cel_rules(exactly_one_rule("header", "property")))

    header: Identifier | None = None
    property: Identifier | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        exactly_one(self, "header", "property")
        return self


class JmsDestination(CamelModel):
    """Where a kafkaToJms route sends: a queue, a topic, or the destination a record header names."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            Rule(
                "[has(self.queue), has(self.topic), has(self.fromHeader)].filter(x, x).size() == 1",
                "set exactly one of `queue`, `topic` or `fromHeader`",
            )
        )
    )

    queue: DestinationName | None = None
    topic: DestinationName | None = None
    from_header: Annotated[str, Field(min_length=1, max_length=255)] | None = Field(
        default=None,
        description="A Kafka record header holding `queue://NAME` or `topic://NAME`; for replies to a JMS "
        "requester, `jms.JMSReplyTo`.",
    )

    @model_validator(mode="after")
    def _one_destination(self) -> Self:
        if sum(v is not None for v in (self.queue, self.topic, self.from_header)) != 1:
            raise ValueError("set exactly one of `queue`, `topic` or `fromHeader`")
        return self


class Correlation(enum.StrEnum):
    """The two JMS conventions for matching an answer to its request: the answer's JMSCorrelationID is the
    request's JMSCorrelationID, or the request's JMSMessageID."""

    CORRELATION_ID = "correlationId"
    MESSAGE_ID = "messageId"


# How long a `messageId` request waits for its answer when its route sets no `reply.timeoutSeconds`.
DEFAULT_REPLY_TIMEOUT_SECONDS = 3600
# A `correlationId` answer needs no pending request, so it has no deadline either.
TIMEOUT_MESSAGE = "`timeoutSeconds` applies to `correlation: messageId` only"


class ReplySpec(CamelModel):
    """Request/reply from Kafka: a record naming a reply topic (header `jmsbridge.replyTopic`) goes to JMS
    with JMSReplyTo the bridge's `jms.replyQueue`; the JMS service's answer goes back to that topic."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            Rule(
                "!has(self.timeoutSeconds) || (has(self.correlation) && self.correlation == 'messageId')",
                TIMEOUT_MESSAGE,
                "timeoutSeconds",
            )
        )
    )

    topics: Annotated[list[TopicName], Field(min_length=1, max_length=100)] = Field(
        description="The reply topics a request may name; a request naming another is a soft failure."
    )
    correlation: Correlation = Field(
        default=Correlation.CORRELATION_ID,
        description="How the JMS service marks its answer: `correlationId`, copying the request's "
        "JMSCorrelationID; `messageId`, setting the request's JMSMessageID as JMSCorrelationID (the bridge "
        "then keeps each request pending in Kafka until its answer or its timeout).",
    )
    timeout_seconds: Annotated[int, Field(ge=1, le=7 * 24 * 3600)] | None = Field(
        default=None,
        description=f"`messageId`: how long a request waits for its answer (default "
        f"{DEFAULT_REPLY_TIMEOUT_SECONDS}); a later answer is a soft failure (`ReplyExpired`).",
    )

    @model_validator(mode="after")
    def _timeout_for_message_ids(self) -> Self:
        if self.timeout_seconds is not None and self.correlation is not Correlation.MESSAGE_ID:
            raise ValueError(TIMEOUT_MESSAGE)
        return self

    @property
    def timeout_ms(self) -> int:
        return (self.timeout_seconds or DEFAULT_REPLY_TIMEOUT_SECONDS) * 1000


class StartingOffsets(enum.StrEnum):
    EARLIEST = "earliest"
    LATEST = "latest"


class JmsSendSpec(CamelModel):
    """How a kafkaToJms route sends its messages; what is left unset comes from the record."""

    delivery_mode: Literal["persistent", "nonPersistent"] | None = None
    priority: Annotated[int, Field(ge=0, le=9)] | None = None
    time_to_live_ms: Annotated[int, Field(ge=0, le=10 * 365 * 24 * 3600 * 1000)] | None = Field(
        default=None, description="0: never expires. Unset: the record's own expiration, if any."
    )
    correlation: Correlation = Field(
        default=Correlation.CORRELATION_ID,
        description="Where the message's JMSCorrelationID comes from: the record's own "
        "(`jms.JMSCorrelationID`), or, for answers to a JMS requester that expects its request's "
        "JMSMessageID back, the record's `jms.JMSMessageID` (`messageId`).",
    )


WILDCARD_TOPIC_MESSAGE = "kafkaTopic: wildcards (`*`, `>`) apply to direction kafkaToJms only"


def is_topic_pattern(topic: str) -> bool:
    return "*" in topic or ">" in topic


def _ingress_only(field: str) -> Rule:
    return Rule(
        f"self.direction != 'jmsToKafka' || !has(self.{field})",
        f"`{field}` applies to direction kafkaToJms only",
        field,
    )


class JmsBridgeRouteSpec(CamelModel):
    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            Rule(
                "self.direction != 'kafkaToJms' || has(self.jmsDestination)",
                "direction kafkaToJms needs `jmsDestination`",
                "jmsDestination",
            ),
            Rule(
                "self.direction != 'kafkaToJms' || !has(self.key)",
                "`key` applies to direction jmsToKafka only (kafkaToJms carries the record's key as the "
                "KafkaKey property)",
                "key",
            ),
            *(_ingress_only(field) for field in ("jmsDestination", "startingOffsets", "send", "reply")),
            Rule(
                "self.direction != 'jmsToKafka' || !self.kafkaTopic.matches('[*>]')",
                WILDCARD_TOPIC_MESSAGE,
                "kafkaTopic",
            ),
        )
    )

    bridge_ref: BridgeRef
    order: Annotated[int, Field(ge=0, le=1_000_000)] = 0
    direction: Direction = Direction.JMS_TO_KAFKA
    match: RouteMatch = Field(default_factory=RouteMatch)
    kafka_topic: Annotated[str, Field(pattern=TOPICS_PATTERN)] = Field(
        description="Destination (jmsToKafka) or source (kafkaToJms) topic; a kafkaToJms route may read "
        "every topic a pattern matches (`*` one dot-separated segment, `>` the rest)."
    )
    jms_destination: JmsDestination | None = Field(
        default=None, description="Where kafkaToJms messages are sent."
    )
    key: KeySpec | None = Field(default=None, description="Defaults to the JMSMessageID header.")
    format: Format = Format.NATIVE
    on_soft_failure: SoftFailurePolicy | None = Field(
        default=None, description="Overrides the bridge's routing.onSoftFailure for this route."
    )
    starting_offsets: StartingOffsets | None = Field(
        default=None,
        description="kafkaToJms: where a new route starts reading its topic (default latest).",
    )
    send: JmsSendSpec | None = Field(
        default=None, description="kafkaToJms: delivery mode, priority and time to live of sent messages."
    )
    reply: ReplySpec | None = Field(
        default=None, description="kafkaToJms: the records are requests to a JMS service (docs/ingress.md)."
    )

    @model_validator(mode="after")
    def _direction_fields(self) -> Self:
        if self.direction is Direction.JMS_TO_KAFKA and is_topic_pattern(self.kafka_topic):
            raise ValueError(WILDCARD_TOPIC_MESSAGE)
        if self.direction is Direction.KAFKA_TO_JMS:
            if self.jms_destination is None:
                raise ValueError("direction kafkaToJms needs `jmsDestination`")
            if self.key is not None:
                raise ValueError(
                    "`key` applies to direction jmsToKafka only (kafkaToJms carries the record's key as "
                    "the KafkaKey property)"
                )
            return self
        ingress_only = (
            ("jmsDestination", self.jms_destination),
            ("startingOffsets", self.starting_offsets),
            ("send", self.send),
            ("reply", self.reply),
        )
        for name, value in ingress_only:
            if value is not None:
                raise ValueError(f"`{name}` applies to direction kafkaToJms only")
        return self
