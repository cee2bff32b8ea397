"""The model's vocabulary: API names, the patterns of names, the CEL rules mirrored by validators, enums."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt
from pydantic.alias_generators import to_camel

from bridge_job import __version__

API_GROUP = "jmsbridge.dev"


API_VERSION = "v1alpha1"


BRIDGE_KIND = "JmsBridge"


ROUTE_KIND = "JmsBridgeRoute"


# The bridge job's container image, and the one a bridge that names none runs: this release's. The
# operator applies it when it renders (`JMSBRIDGE_JOB_IMAGE` may name another), never the CRD: a default
# stamped into stored bridges would keep them on an old job image after an operator upgrade.
JOB_IMAGE = "ghcr.io/jmsbridge/bridge-job"


DEFAULT_JOB_IMAGE = f"{JOB_IMAGE}:{__version__}"


# Kafka's own rule for topic names (kafka.common.internals.Topic).
TOPIC_PATTERN = r"^[a-zA-Z0-9._-]{1,249}$"


# A kafkaToJms route's source topics: a name, or one with the address wildcards (`*` one dot-separated
# segment, `>` the rest).
TOPICS_PATTERN = r"^[a-zA-Z0-9._*>-]{1,249}$"


# A JMS destination name: no whitespace; providers differ on the rest.
DESTINATION_PATTERN = r"^\S{1,255}$"


# Route address patterns add ActiveMQ-style wildcards: `*` one segment, `>` the rest.
ADDRESS_PATTERN = r"^\S{1,255}$"


# A NATS subject to subscribe to: dot-separated tokens of printable characters, where `*` stands for one
# token and a last `>` for the rest.
SUBJECTS_PATTERN = r"^([^\s.*>]+|\*)(\.([^\s.*>]+|\*))*(\.>)?$|^>$"


# A NATS server: nats://host:port (or tls://), no user info (credentials come from a Secret).
NATS_URL_PATTERN = r"^(nats|tls)://[^\s@/]+$"
# No user:password@: the registry's credentials come from a Secret.
REGISTRY_URL_PATTERN = r"^https?://[^\s@/]+(/[^\s@]*)?$"


# A JMS property or header name is a Java identifier.
IDENTIFIER_PATTERN = r"^[A-Za-z_$][A-Za-z0-9_$]*$"


# Kubernetes object names (RFC 1123 subdomain).
NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"


# The bridge id lands in transactional ids, lease names and object names: keep it a DNS label.
BRIDGE_ID_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$"


TopicName = Annotated[str, Field(pattern=TOPIC_PATTERN, max_length=249)]


DestinationName = Annotated[str, Field(pattern=DESTINATION_PATTERN, max_length=255)]


Identifier = Annotated[str, Field(pattern=IDENTIFIER_PATTERN)]


def _integer_or_text(value: Any) -> Any:
    if isinstance(value, bool | float):
        text = str(value).lower()
        raise ValueError(
            f'an integer or a string: write {value!r} as "{text}" (the job converts the text to the type '
            "the setter takes)"
        )
    return value


# A connection factory's bean property: an integer or a text, which the job converts to the setter's type
# (jms/factories.py). The CRD types it as `x-kubernetes-int-or-string`, the one union of scalars CEL sees
# (so that its rules can refuse a password in a URL); a boolean or a decimal is written as text.
BeanValue = Annotated[StrictInt | Annotated[str, Field(max_length=4096)], BeforeValidator(_integer_or_text)]


def exactly_one(model: BaseModel, first: str, second: str) -> None:
    """ValueError unless exactly one of two optional fields is set (named as in YAML in the message)."""
    if (getattr(model, first) is None) == (getattr(model, second) is None):
        raise ValueError(f"set exactly one of `{to_camel(first)}` or `{to_camel(second)}`")


@dataclasses.dataclass(frozen=True)
class Rule:
    """A cross-field rule of a model, also written into its CRD schema as a CEL rule, so that the API
    server rejects at `kubectl apply` what the model's validator rejects (`x-kubernetes-validations`).
    `field` (a YAML field name) is the field the API server names in its answer.
    """

    cel: str
    message: str
    field: str | None = None

    def schema(self) -> dict[str, str]:
        written = {"rule": self.cel, "message": self.message}
        if self.field is not None:
            written["fieldPath"] = f".{self.field}"
        return written


def cel_rules(*rules: Rule) -> Callable[[dict[str, Any]], None]:
    """`json_schema_extra` of a model whose validators these rules mirror (tests/operator/test_admission.py
    runs both over one table of cases)."""

    def extend(schema: dict[str, Any]) -> None:
        schema["x-kubernetes-validations"] = [rule.schema() for rule in rules]

    return extend


def exactly_one_rule(first: str, second: str) -> Rule:
    """The CEL twin of `exactly_one` (fields named as in YAML)."""
    return Rule(f"has(self.{first}) != has(self.{second})", f"set exactly one of `{first}` or `{second}`")


class CamelModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        use_enum_values=False,
        # A field's docstring is its description in the CRDs (`kubectl explain`): every user-facing field
        # has one (tests/operator/test_crdgen.py).
        use_attribute_docstrings=True,
    )

    def dump(self) -> dict[str, Any]:
        """The wire form: camelCase, enums as values, unset optionals left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class SoftFailurePolicy(enum.StrEnum):
    FAIL = "fail"
    SKIP = "skip"
    DEAD_LETTER = "deadLetter"


class Delivery(enum.StrEnum):
    AT_LEAST_ONCE = "atLeastOnce"
    EXACTLY_ONCE = "exactlyOnce"


class Direction(enum.StrEnum):
    JMS_TO_KAFKA = "jmsToKafka"
    KAFKA_TO_JMS = "kafkaToJms"
    NATS_TO_JMS = "natsToJms"
    JMS_TO_NATS = "jmsToNats"

    @property
    def takes_jms(self) -> bool:
        """Whether the route takes messages from the bridge's JMS sources (through the journal)."""
        return self in (Direction.JMS_TO_KAFKA, Direction.JMS_TO_NATS)

    @property
    def uses_nats(self) -> bool:
        return self in (Direction.NATS_TO_JMS, Direction.JMS_TO_NATS)


class Format(enum.StrEnum):
    NATIVE = "native"
    BASIC = "basic"
    JSON = "json"
    ENVELOPE = "envelope"
    AVRO = "avro"
    JSON_SCHEMA = "jsonSchema"

    @property
    def registered(self) -> bool:
        """Whether records of this format name their schema in the bridge's schema registry."""
        return self in (Format.AVRO, Format.JSON_SCHEMA)


class SubjectNameStrategy(enum.StrEnum):
    """Under which subject of the schema registry a topic's schemas are (Confluent's strategies)."""

    TOPIC_NAME = "TopicName"  # <topic>-key, <topic>-value
    RECORD_NAME = "RecordName"  # io.confluent.connect.jms.Key, ...Value
    TOPIC_RECORD_NAME = "TopicRecordName"  # <topic>-io.confluent.connect.jms.Value


class SecurityProtocol(enum.StrEnum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"


class SaslMechanism(enum.StrEnum):
    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"
