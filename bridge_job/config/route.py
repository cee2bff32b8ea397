"""A JmsBridgeRoute's spec: which messages it takes, where they go, how they are keyed and converted."""

from __future__ import annotations

import enum
import re
from typing import Annotated, Literal, Self

from pydantic import ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_snake

from bridge_job.config.schema import (
    ADDRESS_PATTERN,
    NAME_PATTERN,
    SUBJECTS_PATTERN,
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
    name: Annotated[str, Field(pattern=NAME_PATTERN, max_length=253)]
    """The JmsBridge in the route's namespace that the route belongs to."""


class RouteMatch(CamelModel):
    """Which messages a route takes. Every given condition must hold; an empty match takes everything."""

    address: Annotated[str, Field(pattern=ADDRESS_PATTERN, max_length=255)] | None = Field(
        default=None,
        description="JMS destination name (jmsToKafka) or Kafka topic (kafkaToJms); `*` matches one "
        "dot-separated segment, `>` the rest.",
    )
    destination_type: Literal["queue", "topic"] | None = None
    """jmsToKafka, jmsToNats: only messages from a queue, or from a topic."""
    headers: dict[Identifier, str] = Field(
        default_factory=dict,
        description="JMS header or property values the message must carry (compared as text).",
    )


class KeySpec(CamelModel):
    """Where the Kafka key comes from: a JMS header (JMSCorrelationID, ...) or a property."""

    model_config = ConfigDict(json_schema_extra=cel_rules(exactly_one_rule("header", "property")))

    header: Identifier | None = None
    """A JMS header (JMSCorrelationID, JMSType...) whose value is the record key."""
    property: Identifier | None = None
    """A JMS message property whose value is the record key."""

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        exactly_one(self, "header", "property")
        return self


# `fromHeader` lets whoever writes the route's records choose the JMS destination: `allowed` bounds that
# choice, and a route cannot leave it unbounded by omission (security issue 43).
FROM_HEADER_MESSAGE = (
    "`fromHeader` needs `allowed`: a regular expression that the destination the header names, written "
    "`queue://NAME` or `topic://NAME`, must match in full (e.g. `queue://replies\\..*`)"
)
ALLOWED_MESSAGE = "`allowed` applies to `fromHeader` only"
# Room for any sensible alternation of names; a longer expression is more likely a mistake than a need.
ALLOWED_MAX_LENGTH = 1024


class JmsDestination(CamelModel):
    """Where a kafkaToJms or natsToJms route sends: a queue, a topic, or the destination a header names."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            Rule(
                "[has(self.queue), has(self.topic), has(self.fromHeader)].filter(x, x).size() == 1",
                "set exactly one of `queue`, `topic` or `fromHeader`",
            ),
            Rule("!has(self.fromHeader) || has(self.allowed)", FROM_HEADER_MESSAGE, "allowed"),
            Rule("!has(self.allowed) || has(self.fromHeader)", ALLOWED_MESSAGE, "allowed"),
        )
    )

    queue: DestinationName | None = None
    """A queue to send to."""
    topic: DestinationName | None = None
    """A topic to send to."""
    from_header: Annotated[str, Field(min_length=1, max_length=255)] | None = Field(
        default=None,
        description="A Kafka record header holding `queue://NAME` or `topic://NAME`; for replies to a JMS "
        "requester, `jms.JMSReplyTo`. Needs `allowed`.",
    )
    allowed: Annotated[str, Field(min_length=1, max_length=ALLOWED_MAX_LENGTH)] | None = Field(
        default=None,
        description="With `fromHeader`: a (Python) regular expression that the destination the header "
        "names, as `queue://NAME` or `topic://NAME`, must match in full, e.g. `queue://orders\\..*`; any "
        "other destination, and any name holding whitespace, `,`, `*`, `>` or `#` (several destinations on "
        "ActiveMQ or Artemis), is a soft failure (`DestinationNotAllowed`) and nothing is sent there.",
    )

    @field_validator("allowed")
    @classmethod
    def _a_regular_expression(cls, allowed: str | None) -> str | None:
        if allowed is not None:
            try:
                re.compile(allowed)
            except re.error as error:
                raise ValueError(f"`allowed` is no regular expression: {error}") from None
        return allowed

    @model_validator(mode="after")
    def _one_destination(self) -> Self:
        if sum(v is not None for v in (self.queue, self.topic, self.from_header)) != 1:
            raise ValueError("set exactly one of `queue`, `topic` or `fromHeader`")
        if self.from_header is not None and self.allowed is None:
            raise ValueError(FROM_HEADER_MESSAGE)
        if self.allowed is not None and self.from_header is None:
            raise ValueError(ALLOWED_MESSAGE)
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
    """persistent or nonPersistent; unset: the record's own (its JMS headers), if any."""
    priority: Annotated[int, Field(ge=0, le=9)] | None = None
    """The JMS priority, 0 to 9; unset: the record's own, if any."""
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


# How long a NATS request waits for its JMS answer when its route sets no `timeoutSeconds`.
DEFAULT_NATS_TIMEOUT_SECONDS = 30

# The fields each direction takes beside bridgeRef, order, direction, format and onSoftFailure; the others
# are refused, so that nothing a route says is silently ignored.
_FIELDS = {
    "jmsToKafka": ("kafkaTopic", "key"),
    "kafkaToJms": ("kafkaTopic", "jmsDestination", "startingOffsets", "send", "reply"),
    "natsToJms": ("natsSubject", "natsQueueGroup", "jmsDestination", "send", "timeoutSeconds"),
    "jmsToNats": ("natsSubject",),
}
_REQUIRED = {
    "jmsToKafka": ("kafkaTopic",),
    "kafkaToJms": ("kafkaTopic", "jmsDestination"),
    "natsToJms": ("natsSubject", "jmsDestination"),
    "jmsToNats": ("natsSubject",),
}
REGISTERED_FORMAT_MESSAGE = (
    "format avro and jsonSchema apply to directions jmsToKafka and kafkaToJms only (their schemas are in "
    "the bridge's Kafka schema registry)"
)
WILDCARD_SUBJECT_MESSAGE = "natsSubject: wildcards (`*`, `>`) apply to direction natsToJms only"
NATS_MATCH_MESSAGE = (
    "`match` applies to directions jmsToKafka, kafkaToJms and jmsToNats (natsToJms takes `natsSubject`)"
)
_SPECIFIC = sorted({f for fields in _FIELDS.values() for f in fields})


def _direction_rules() -> list[Rule]:
    rules = []
    for field in _SPECIFIC:
        takers = [d for d, fields in _FIELDS.items() if field in fields]
        allowed = " || ".join(f"self.direction == '{d}'" for d in takers)
        rules.append(Rule(f"!has(self.{field}) || {allowed}", _only_for(field, takers), field))
    for direction, fields in _REQUIRED.items():
        for field in fields:  # the CRD defaults `direction`: always there for CEL
            rule = f"self.direction != '{direction}' || has(self.{field})"
            rules.append(Rule(rule, f"direction {direction} needs `{field}`", field))
    return rules


def _only_for(field: str, directions: list[str]) -> str:
    return f"`{field}` applies to direction {' or '.join(directions)} only"


class JmsBridgeRouteSpec(CamelModel):
    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            *_direction_rules(),
            Rule(
                "!has(self.natsSubject) || self.direction == 'natsToJms' || "
                "!self.natsSubject.matches('(^|[.])[*>]([.]|$)')",
                WILDCARD_SUBJECT_MESSAGE,
                "natsSubject",
            ),
            Rule(
                "self.direction != 'natsToJms' || (!has(self.match.address) && "
                "!has(self.match.destinationType) && (!has(self.match.headers) || size(self.match.headers) "
                "== 0))",
                NATS_MATCH_MESSAGE,
                "match",
            ),
            Rule(
                "!(self.direction in ['natsToJms', 'jmsToNats']) || !(self.format in ['avro', 'jsonSchema'])",
                REGISTERED_FORMAT_MESSAGE,
                "format",
            ),
            Rule(
                "!has(self.kafkaTopic) || self.direction == 'kafkaToJms' || !self.kafkaTopic.matches('[*>]')",
                WILDCARD_TOPIC_MESSAGE,
                "kafkaTopic",
            ),
        )
    )

    bridge_ref: BridgeRef
    """The bridge the route belongs to (in the same namespace)."""
    order: Annotated[int, Field(ge=0, le=1_000_000)] = 0
    """The route's place among its bridge's routes: they are tried in ascending order and the first that
    matches takes the message; two routes of a bridge cannot share one."""
    direction: Direction = Direction.JMS_TO_KAFKA
    """jmsToKafka (the default), kafkaToJms, natsToJms or jmsToNats."""
    match: RouteMatch = Field(
        default_factory=RouteMatch,
        description="jmsToKafka, jmsToNats, kafkaToJms: which messages the route takes.",
    )
    kafka_topic: Annotated[str, Field(pattern=TOPICS_PATTERN, max_length=249)] | None = Field(
        default=None,
        description="Destination (jmsToKafka) or source (kafkaToJms) topic; a kafkaToJms route may read "
        "every topic a pattern matches (`*` one dot-separated segment, `>` the rest).",
    )
    nats_subject: Annotated[str, Field(pattern=SUBJECTS_PATTERN, max_length=255)] | None = Field(
        default=None,
        description="natsToJms: the NATS subject the route subscribes to (`*` one token, a last `>` the "
        "rest); jmsToNats: the subject it publishes to (no wildcards).",
    )
    nats_queue_group: Annotated[str, Field(pattern=r"^[^\s*>]{1,255}$")] | None = Field(
        default=None,
        description="natsToJms: the queue group of the subscription (default `jmsbridge.<bridgeId>`), "
        "shared with other subscribers that should split the messages with the bridge.",
    )
    jms_destination: JmsDestination | None = Field(
        default=None, description="kafkaToJms, natsToJms: where messages are sent."
    )
    key: KeySpec | None = Field(default=None, description="Defaults to the JMSMessageID header.")
    format: Format = Format.NATIVE
    """How a message becomes a record and back: native, basic, json or envelope; for jmsToKafka and
    kafkaToJms also avro or jsonSchema, with the bridge's kafka.schemaRegistry (docs/formats.md)."""
    on_soft_failure: SoftFailurePolicy | None = Field(
        default=None, description="Overrides the bridge's routing.onSoftFailure for this route."
    )
    starting_offsets: StartingOffsets | None = Field(
        default=None,
        description="kafkaToJms: where a new route starts reading its topic (default latest).",
    )
    send: JmsSendSpec | None = Field(
        default=None,
        description="kafkaToJms, natsToJms: delivery mode, priority and time to live of sent messages.",
    )
    reply: ReplySpec | None = Field(
        default=None, description="kafkaToJms: the records are requests to a JMS service (docs/ingress.md)."
    )
    timeout_seconds: Annotated[int, Field(ge=1, le=3600)] | None = Field(
        default=None,
        description=f"natsToJms: how long a NATS request waits for the JMS service's answer (default "
        f"{DEFAULT_NATS_TIMEOUT_SECONDS}); then the requester gets a 408 status reply (docs/nats.md).",
    )

    @model_validator(mode="after")
    def _direction_fields(self) -> Self:
        direction = self.direction.value
        for field in _SPECIFIC:
            if getattr(self, to_snake(field)) is not None and field not in _FIELDS[direction]:
                takers = [d for d, fields in _FIELDS.items() if field in fields]
                raise ValueError(_only_for(field, takers))
        for field in _REQUIRED[direction]:
            if getattr(self, to_snake(field)) is None:
                raise ValueError(f"direction {direction} needs `{field}`")
        if self.direction is not Direction.KAFKA_TO_JMS and is_topic_pattern(self.kafka_topic or ""):
            raise ValueError(WILDCARD_TOPIC_MESSAGE)
        if self.direction is Direction.NATS_TO_JMS and self.match != _TAKE_ALL:
            raise ValueError(NATS_MATCH_MESSAGE)
        if self.direction is Direction.JMS_TO_NATS and "*" in (self.nats_subject or "").split("."):
            raise ValueError(WILDCARD_SUBJECT_MESSAGE)
        if self.direction is Direction.JMS_TO_NATS and ">" in (self.nats_subject or "").split("."):
            raise ValueError(WILDCARD_SUBJECT_MESSAGE)
        if self.direction.uses_nats and self.format.registered:
            raise ValueError(REGISTERED_FORMAT_MESSAGE)
        return self

    @property
    def topic(self) -> str:
        """The Kafka topic of a jmsToKafka or kafkaToJms route (the model requires it there)."""
        assert self.kafka_topic is not None, f"a {self.direction.value} route has no kafkaTopic"
        return self.kafka_topic

    @property
    def timeout_ms(self) -> int:
        return (self.timeout_seconds or DEFAULT_NATS_TIMEOUT_SECONDS) * 1000


_TAKE_ALL = RouteMatch()
