"""The bridge's configuration: one pydantic model shared by the operator and the job.

These models are the contract between the two halves of the product. The operator validates
`JmsBridge` and `JmsBridgeRoute` resources with them, generates the CRD schemas from them, and renders a
`JobConfig` into the bridge's ConfigMap; the job reads that `JobConfig` back (or builds it from the same
YAML a user applies, when run from the command line). Field names are camelCase on the wire (Kubernetes
style) and snake_case in Python.

Unknown fields are rejected (`extra="forbid"`) so that a typo in a resource is an error that names the
field rather than a setting silently ignored.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from bridge_job import __version__
from bridge_job.spark_settings import OWNED_SETTINGS

API_GROUP = "jmsbridge.dev"
API_VERSION = "v1alpha1"
BRIDGE_KIND = "JmsBridge"
ROUTE_KIND = "JmsBridgeRoute"
# The bridge job's container image; by default the tag of this release.
JOB_IMAGE = "ghcr.io/jmsbridge/bridge-job"

# Kafka's own rule for topic names (kafka.common.internals.Topic).
TOPIC_PATTERN = r"^[a-zA-Z0-9._-]{1,249}$"
# A kafkaToJms route's source topics: a name, or one with the address wildcards (`*` one dot-separated
# segment, `>` the rest).
TOPICS_PATTERN = r"^[a-zA-Z0-9._*>-]{1,249}$"
# A JMS destination name: no whitespace; providers differ on the rest.
DESTINATION_PATTERN = r"^\S{1,255}$"
# Route address patterns add ActiveMQ-style wildcards: `*` one segment, `>` the rest.
ADDRESS_PATTERN = r"^\S{1,255}$"
# A JMS property or header name is a Java identifier.
IDENTIFIER_PATTERN = r"^[A-Za-z_$][A-Za-z0-9_$]*$"
# Kubernetes object names (RFC 1123 subdomain).
NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
# The bridge id lands in transactional ids, lease names and object names: keep it a DNS label.
BRIDGE_ID_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$"

TopicName = Annotated[str, Field(pattern=TOPIC_PATTERN)]
DestinationName = Annotated[str, Field(pattern=DESTINATION_PATTERN)]
Identifier = Annotated[str, Field(pattern=IDENTIFIER_PATTERN)]
ScalarValue = str | int | float | bool


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


class Format(enum.StrEnum):
    NATIVE = "native"
    BASIC = "basic"
    JSON = "json"
    ENVELOPE = "envelope"


class SecurityProtocol(enum.StrEnum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"


class SaslMechanism(enum.StrEnum):
    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"


# ---------------------------------------------------------------------------------------------------
# JmsBridge


class SecretRef(CamelModel):
    """A Secret holding a username and a password; the values never leave the Secret."""

    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    username_key: str = "username"
    password_key: str = "password"


class ConnectionFactorySpec(CamelModel):
    """Any JMS provider: the ConnectionFactory class and the bean properties to set on it."""

    class_name: Annotated[str, Field(pattern=r"^[A-Za-z_$][A-Za-z0-9_$.]*$")]
    properties: dict[str, ScalarValue] = Field(default_factory=dict)


class JndiSpec(CamelModel):
    """Look the ConnectionFactory up in JNDI instead of constructing it."""

    initial_context_factory: str
    provider_url: str
    connection_factory_name: str = "ConnectionFactory"
    environment: dict[str, str] = Field(default_factory=dict)


class JmsSource(CamelModel):
    """One JMS destination the bridge consumes: a queue, or a topic through a durable subscription."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            exactly_one_rule("queue", "topic"),
            Rule(
                "!has(self.topic) || has(self.durableSubscription)",
                "a topic needs `durableSubscription`: without one, messages published while the bridge is "
                "down would be lost",
                "durableSubscription",
            ),
            Rule(
                "!has(self.queue) || !has(self.durableSubscription)",
                "`durableSubscription` applies to topics only",
                "durableSubscription",
            ),
        )
    )

    queue: DestinationName | None = None
    topic: DestinationName | None = None
    durable_subscription: Annotated[str, Field(min_length=1, max_length=255)] | None = None
    selector: str | None = None

    @model_validator(mode="after")
    def _one_destination(self) -> Self:
        exactly_one(self, "queue", "topic")
        if self.topic is not None and self.durable_subscription is None:
            raise ValueError(
                f"topic {self.topic!r} needs `durableSubscription`: without one, messages published while "
                "the bridge is down would be lost"
            )
        if self.queue is not None and self.durable_subscription is not None:
            raise ValueError("`durableSubscription` applies to topics only")
        return self

    @property
    def address(self) -> str:
        return self.queue or self.topic or ""


class IngestSpec(CamelModel):
    """How the driver takes messages off JMS: one transaction per batch."""

    # ActiveMQ hands a consumer at most 200 uncommitted messages (its page size): larger batches wait.
    max_batch_messages: Annotated[int, Field(ge=1, le=100_000)] = 200
    max_batch_delay_ms: Annotated[int, Field(ge=1, le=60_000)] = 100


class ClientLibrary(CamelModel):
    """An image holding a JMS provider's client jars. An init container of every driver and executor pod
    copies them (`cp`, so the image needs one) into the job's JMS library directory, `JMS_LIBRARY_DIR`.
    """

    image: Annotated[str, Field(min_length=1)]
    path: Annotated[str, Field(pattern=r"^/\S*$")] = Field(
        default="/jars",
        description="The directory in the image whose jars are copied (not its subdirectories).",
    )
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"


class ReconnectSpec(CamelModel):
    """How long the ingest keeps reconnecting to a JMS broker it lost before it stops the bridge."""

    window_seconds: Annotated[int, Field(ge=0, le=7 * 24 * 3600)] = Field(
        default=300,
        description="Seconds of failing JMS calls (lost connection, failed commits) after which the job "
        "stops with exit 2; meanwhile it rolls back, reconnects with backoff and carries on.",
    )


class JmsSpec(CamelModel):
    # Sources listed twice stay an operator check (InvalidSpec): a CEL rule comparing every pair of an
    # unbounded list is over the API server's cost budget.
    model_config = ConfigDict(json_schema_extra=cel_rules(exactly_one_rule("connectionFactory", "jndi")))

    connection_factory: ConnectionFactorySpec | None = None
    jndi: JndiSpec | None = None
    credentials_secret_ref: SecretRef | None = None
    client_id: str | None = None
    classpath: list[str] = Field(
        default_factory=list,
        description="Jars (globs allowed) holding the provider's JMS client; empty means the image default.",
    )
    client_libraries: Annotated[list[ClientLibrary], Field(max_length=8)] | None = Field(
        default=None,
        description="Images whose jars are copied into the job's JMS library directory (the default "
        "classpath) before it starts: provider jars without rebuilding the job image.",
    )
    sources: Annotated[list[JmsSource], Field(min_length=1)]
    reply_queue: DestinationName | None = Field(
        default=None,
        description="One of the queue `sources`: where JMS services answer requests that came from Kafka "
        "(the JMSReplyTo of kafkaToJms routes with `reply`); its messages go to the reply topic each names.",
    )
    ingest: IngestSpec = Field(default_factory=IngestSpec)
    reconnect: ReconnectSpec = Field(default_factory=ReconnectSpec)

    @model_validator(mode="after")
    def _one_factory(self) -> Self:
        exactly_one(self, "connection_factory", "jndi")
        addresses = [s.address for s in self.sources]
        if self.reply_queue is not None and self.reply_queue not in (s.queue for s in self.sources):
            raise ValueError(f"replyQueue {self.reply_queue} must be one of the queue `sources` as well")
        duplicates = sorted({a for a in addresses if addresses.count(a) > 1})
        if duplicates:
            raise ValueError(f"sources list {', '.join(duplicates)} more than once")
        return self


class SaslSpec(CamelModel):
    mechanism: SaslMechanism = SaslMechanism.SCRAM_SHA_512
    credentials_secret_ref: SecretRef


class KafkaSpec(CamelModel):
    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            Rule(
                "!(self.securityProtocol in ['SASL_PLAINTEXT', 'SASL_SSL']) || has(self.sasl)",
                "securityProtocol SASL_PLAINTEXT or SASL_SSL needs `sasl`",
                "sasl",
            ),
            Rule(
                "!has(self.sasl) || self.securityProtocol in ['SASL_PLAINTEXT', 'SASL_SSL']",
                "`sasl` needs securityProtocol SASL_PLAINTEXT or SASL_SSL",
                "sasl",
            ),
        )
    )

    bootstrap_servers: Annotated[str, Field(min_length=1)]
    security_protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    sasl: SaslSpec | None = None
    journal_topic: TopicName | None = Field(
        default=None, description="Defaults to `<bridgeId>.jms-bridge.journal`."
    )
    create_journal_topic: bool = False
    journal_partitions: Annotated[int, Field(ge=1, le=1000)] = 1
    startup_timeout_seconds: Annotated[int, Field(ge=0, le=3600)] = Field(
        default=300,
        description="How long the job waits for Kafka to answer when it starts before it stops (exit 2).",
    )
    properties: dict[str, str] = Field(
        default_factory=dict,
        description="Extra librdkafka settings for every Kafka client of the bridge (the job's and the "
        "operator's checks). The fields above and the bridge's guarantees (allow.auto.create.topics=false; "
        "idempotent producers with acks=all) take precedence over them.",
    )

    @model_validator(mode="after")
    def _sasl_needs_protocol(self) -> Self:
        uses_sasl = self.security_protocol in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)
        if uses_sasl and self.sasl is None:
            raise ValueError(f"securityProtocol {self.security_protocol.value} needs `sasl`")
        if self.sasl is not None and not uses_sasl:
            raise ValueError("`sasl` needs securityProtocol SASL_PLAINTEXT or SASL_SSL")
        return self


class RoutingSpec(CamelModel):
    dead_letter_topic: TopicName | None = None
    on_soft_failure: SoftFailurePolicy = SoftFailurePolicy.FAIL


class FailoverSpec(CamelModel):
    standby: bool = False
    lease_duration_seconds: Annotated[int, Field(ge=2, le=300)] = 10


class ResourcesSpec(CamelModel):
    cores: Annotated[int, Field(ge=1, le=64)] = 1
    memory: Annotated[str, Field(pattern=r"^[0-9]+[kmgt]?$")] = "1g"


class ExecutorSpec(ResourcesSpec):
    instances: Annotated[int, Field(ge=1, le=100)] = 1


class CheckpointSpec(CamelModel):
    path: str = "/var/lib/jmsbridge/checkpoints"
    persistent_volume_claim: Annotated[str, Field(pattern=NAME_PATTERN)] | None = None


KUBE_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
KubeName = Annotated[str, Field(pattern=KUBE_NAME_PATTERN)]
# Volume and environment names of the operator's own (the config, the checkpoints, the JMS jars, the
# credentials): a bridge's pod settings cannot take them.
RESERVED_VOLUME_PREFIX = "jmsbridge-"
RESERVED_ENV_PREFIX = "JMSBRIDGE_"


class VolumeMount(CamelModel):
    name: KubeName
    mount_path: Annotated[str, Field(pattern=r"^/")]
    sub_path: str | None = None
    read_only: bool | None = None


class EnvVar(CamelModel):
    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            Rule(
                f"!self.name.startsWith('{RESERVED_ENV_PREFIX}')",
                f"environment variables named {RESERVED_ENV_PREFIX}* are set by the operator",
                "name",
            ),
            Rule("!(has(self.value) && has(self.valueFrom))", "set `value` or `valueFrom`, not both"),
        )
    )

    name: Annotated[str, Field(pattern=r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")]
    value: str | None = None
    value_from: dict[str, Any] | None = Field(
        default=None, description="A Kubernetes EnvVarSource (secretKeyRef, configMapKeyRef, fieldRef, ...)."
    )

    @model_validator(mode="after")
    def _ours_and_one_value(self) -> Self:
        if self.name.startswith(RESERVED_ENV_PREFIX):
            raise ValueError(f"environment variables named {RESERVED_ENV_PREFIX}* are set by the operator")
        if self.value is not None and self.value_from is not None:
            raise ValueError("set `value` or `valueFrom`, not both")
        return self


class Toleration(CamelModel):
    key: str | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None


def _kept_whole(schema: dict[str, Any]) -> None:
    # CEL sees only the declared `name` of an object that keeps unknown fields: "exactly one source" stays
    # with the model (and the operator's InvalidSpec).
    schema["x-kubernetes-preserve-unknown-fields"] = True
    cel_rules(
        Rule(
            f"!self.name.startsWith('{RESERVED_VOLUME_PREFIX}')",
            f"volume names starting with `{RESERVED_VOLUME_PREFIX}` are the operator's",
            "name",
        ),
    )(schema)


class Volume(BaseModel):
    """A Kubernetes Volume, passed to the SparkApplication as given: its source (secret, configMap,
    emptyDir, persistentVolumeClaim, projected, csi...) is checked by the API server with the pod."""

    model_config = ConfigDict(extra="allow", frozen=True, json_schema_extra=_kept_whole)

    name: KubeName

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.name.startswith(RESERVED_VOLUME_PREFIX):
            raise ValueError(f"volume names starting with `{RESERVED_VOLUME_PREFIX}` are the operator's")
        if len(self.model_extra or {}) != 1:
            raise ValueError("a volume has a `name` and exactly one volume source (secret, configMap...)")
        return self


class PodSettings(CamelModel):
    """What every driver and executor pod of the bridge gets besides what the operator sets: Secrets
    mounted as files (a Kafka truststore for `kafka.properties`' `ssl.ca.location`), environment, where
    the pods may run, and the credentials to pull images."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            Rule(
                "!has(self.volumeMounts) || self.volumeMounts.all(m, has(self.volumes) && "
                "self.volumes.exists(v, v.name == m.name))",
                "every volumeMount names a volume of `volumes`",
                "volumeMounts",
            )
        )
    )

    image_pull_secrets: Annotated[list[KubeName], Field(max_length=16)] = Field(default_factory=list)
    node_selector: Annotated[dict[str, str], Field(max_length=64)] = Field(default_factory=dict)
    tolerations: Annotated[list[Toleration], Field(max_length=32)] = Field(default_factory=list)
    env: Annotated[list[EnvVar], Field(max_length=64)] = Field(default_factory=list)
    volumes: Annotated[list[Volume], Field(max_length=32)] = Field(default_factory=list)
    volume_mounts: Annotated[list[VolumeMount], Field(max_length=32)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _mounts_name_volumes(self) -> Self:
        names = {volume.name for volume in self.volumes}
        unknown = sorted({mount.name for mount in self.volume_mounts} - names)
        if unknown:
            raise ValueError(f"every volumeMount names a volume of `volumes`; not: {', '.join(unknown)}")
        return self


class SparkSpec(CamelModel):
    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            Rule(
                f"!has(self.sparkConf) || self.sparkConf.all(k, !(k in {sorted(OWNED_SETTINGS)}))",
                f"sparkConf cannot set {', '.join(sorted(OWNED_SETTINGS))}: the bridge job needs its values",
                "sparkConf",
            )
        )
    )

    image: str = f"{JOB_IMAGE}:{__version__}"
    spark_version: str = "4.0.0"
    service_account: str | None = None
    driver: ResourcesSpec = Field(default_factory=ResourcesSpec)
    executor: ExecutorSpec = Field(default_factory=ExecutorSpec)
    checkpoint: CheckpointSpec = Field(default_factory=CheckpointSpec)
    trigger_interval_ms: Annotated[int, Field(ge=0, le=600_000)] = 500
    max_records_per_batch: Annotated[int, Field(ge=1, le=10_000_000)] = 20_000
    dedup_window_seconds: Annotated[int, Field(ge=1, le=7 * 24 * 3600)] = Field(
        default=600,
        description="How far back (by journal time) a redelivered JMS message is looked for in the journal.",
    )
    spark_conf: Annotated[dict[str, str], Field(max_length=64)] | None = Field(
        default=None,
        description="Spark settings added to the job's own; extraJavaOptions are appended to the job's, "
        "and the settings the job needs for its guarantees cannot be set.",
    )
    pod: PodSettings | None = None

    @model_validator(mode="after")
    def _conf_leaves_ours(self) -> Self:
        taken = sorted(set(self.spark_conf or {}) & OWNED_SETTINGS)
        if taken:
            raise ValueError(f"sparkConf cannot set {', '.join(taken)}: the bridge job needs its values")
        return self


class TelemetrySpec(CamelModel):
    port: Annotated[int, Field(ge=0, le=65535)] = 9464


class SecuritySpec(CamelModel):
    allow_inline_credentials: bool = Field(
        default=False,
        description="Accept credentials in connection factory properties, the JNDI environment, Kafka "
        "properties and URLs with a warning instead of refusing the bridge. They are then stored in plain "
        "text in the job's ConfigMap: prefer credentialsSecretRef and kafka.sasl.",
    )


class JmsBridgeSpec(CamelModel):
    bridge_id: Annotated[str, Field(pattern=BRIDGE_ID_PATTERN)] | None = Field(
        default=None, description="Defaults to metadata.name."
    )
    jms: JmsSpec
    kafka: KafkaSpec
    routing: RoutingSpec = Field(default_factory=RoutingSpec)
    delivery: Delivery = Delivery.AT_LEAST_ONCE
    failover: FailoverSpec = Field(default_factory=FailoverSpec)
    spark: SparkSpec = Field(default_factory=SparkSpec)
    telemetry: TelemetrySpec = Field(default_factory=TelemetrySpec)
    security: SecuritySpec = Field(default_factory=SecuritySpec)
    suspend: bool = False


# ---------------------------------------------------------------------------------------------------
# JmsBridgeRoute


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


class ReplySpec(CamelModel):
    """Request/reply from Kafka: a record naming a reply topic (header `jmsbridge.replyTopic`) goes to JMS
    with JMSReplyTo the bridge's `jms.replyQueue`; the JMS service's answer goes back to that topic."""

    topics: Annotated[list[TopicName], Field(min_length=1, max_length=100)] = Field(
        description="The reply topics a request may name; a request naming another is a soft failure."
    )


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


# ---------------------------------------------------------------------------------------------------
# Resources as a user writes them


class ObjectMeta(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    namespace: str | None = None


class JmsBridge(CamelModel):
    model_config = ConfigDict(extra="ignore")  # status and the like are not ours to validate
    api_version: Literal["jmsbridge.dev/v1alpha1"]
    kind: Literal["JmsBridge"]
    metadata: ObjectMeta
    spec: JmsBridgeSpec


class JmsBridgeRoute(CamelModel):
    model_config = ConfigDict(extra="ignore")
    api_version: Literal["jmsbridge.dev/v1alpha1"]
    kind: Literal["JmsBridgeRoute"]
    metadata: ObjectMeta
    spec: JmsBridgeRouteSpec


# ---------------------------------------------------------------------------------------------------
# What the job runs


class Route(CamelModel):
    """A route in effect: its resource name plus its spec."""

    name: str
    spec: JmsBridgeRouteSpec


class JobConfig(CamelModel):
    """What the operator renders into the bridge's ConfigMap and the job reads: one bridge, its routes."""

    bridge_id: Annotated[str, Field(pattern=BRIDGE_ID_PATTERN)]
    namespace: str | None = None
    bridge: JmsBridgeSpec
    routes: list[Route] = Field(default_factory=list)

    @property
    def journal_topic(self) -> str:
        return self.bridge.kafka.journal_topic or f"{self.bridge_id}.jms-bridge.journal"

    def routes_for(self, direction: Direction) -> list[Route]:
        return [r for r in self.routes if r.spec.direction is direction]

    @model_validator(mode="after")
    def _routes_runnable(self) -> Self:
        ordered = sorted(self.routes, key=route_sort_key)
        if ordered != self.routes:
            raise ValueError("routes must be in (order, name) order")
        dead_letter = self.bridge.routing.dead_letter_topic
        for route in self.routes:
            if route.spec.reply is not None and self.bridge.jms.reply_queue is None:
                raise ValueError(f"route {route.name!r} has `reply` but the bridge sets no jms.replyQueue")
            policy = route.spec.on_soft_failure or self.bridge.routing.on_soft_failure
            if policy is SoftFailurePolicy.DEAD_LETTER and dead_letter is None:
                raise ValueError(
                    f"route {route.name!r} dead-letters soft failures but the bridge sets no "
                    "routing.deadLetterTopic"
                )
        return self


def kafka_name_prefix(bridge_id: str) -> str:
    """What every consumer group and transactional id of the bridge starts with (one prefixed ACL)."""
    return f"{bridge_id}.jms-bridge."


def journal_reader_group(bridge_id: str) -> str:
    return f"{kafka_name_prefix(bridge_id)}journal-reader"


def ingress_group(bridge_id: str) -> str:
    return f"{kafka_name_prefix(bridge_id)}ingress"


def transactional_id_prefix(bridge_id: str) -> str:
    return kafka_name_prefix(bridge_id)


def route_sort_key(route: Route) -> tuple[int, str]:
    return (route.spec.order, route.name)


def bridge_id_of(bridge: JmsBridge) -> str:
    return bridge.spec.bridge_id or bridge.metadata.name


def job_config(bridge: JmsBridge, routes: Iterable[JmsBridgeRoute]) -> JobConfig:
    """The JobConfig for a bridge and the routes that reference it (others are ignored)."""
    mine = [
        Route(name=r.metadata.name, spec=r.spec)
        for r in routes
        if r.spec.bridge_ref.name == bridge.metadata.name
        and (r.metadata.namespace or None) == (bridge.metadata.namespace or None)
    ]
    return JobConfig(
        bridge_id=bridge_id_of(bridge),
        namespace=bridge.metadata.namespace,
        bridge=bridge.spec,
        routes=sorted(mine, key=route_sort_key),
    )


# ---------------------------------------------------------------------------------------------------
# Errors a user can act on


class ConfigError(Exception):
    """A resource or config file is invalid; the message says where and what to fix."""


def field_errors(error: ValidationError) -> list[tuple[str, str]]:
    """`(field path, message)` for each problem of a pydantic error, the path dotted."""
    return [
        (".".join(str(p) for p in item["loc"]) or "(document)", item["msg"].removeprefix("Value error, "))
        for item in error.errors()
    ]


def describe_validation_error(error: ValidationError, where: str) -> str:
    """One line per problem: `<where>: <field path>: <message>`."""
    return "\n".join(f"{where}: {path}: {message}" for path, message in field_errors(error))


def parse_resource(document: Mapping[str, Any], where: str) -> JmsBridge | JmsBridgeRoute:
    """Validate one YAML document as a JmsBridge or JmsBridgeRoute."""
    kind = document.get("kind")
    model: type[JmsBridge] | type[JmsBridgeRoute]
    if kind == BRIDGE_KIND:
        model = JmsBridge
    elif kind == ROUTE_KIND:
        model = JmsBridgeRoute
    else:
        raise ConfigError(f"{where}: kind: expected {BRIDGE_KIND} or {ROUTE_KIND}, got {kind!r}")
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise ConfigError(describe_validation_error(error, where)) from None


# ---------------------------------------------------------------------------------------------------
# How the operator hands the config and the secrets to the job (both sides read these names).

CONFIG_MOUNT_PATH = "/etc/jmsbridge"
CONFIG_FILE_NAME = "job.yaml"
# Where the job's default JMS classpath looks for jars (`ingest.DEFAULT_CLASSPATH`), and where
# `jms.clientLibraries` are copied to.
JMS_LIBRARY_DIR = "/opt/jmsbridge/jms-lib"
JOB_MAIN_FILE = "local:///opt/jmsbridge/jmsbridge-job.py"
ENV_JMS_USERNAME = "JMSBRIDGE_JMS_USERNAME"
ENV_JMS_PASSWORD = "JMSBRIDGE_JMS_PASSWORD"
ENV_KAFKA_USERNAME = "JMSBRIDGE_KAFKA_USERNAME"
ENV_KAFKA_PASSWORD = "JMSBRIDGE_KAFKA_PASSWORD"


# The active/standby election: the instances of a bridge compete for one coordination.k8s.io Lease in the
# bridge's namespace; its holder is the active instance (`bridge_job/leadership.py`). The job's service
# account needs get, create and update on leases there.


def lease_name(bridge_id: str) -> str:
    return f"{bridge_id}-jms-bridge"


def health_config_map_name(bridge_id: str) -> str:
    """The ConfigMap where the job reports its brokers' state to the operator (bridge_job/health.py)."""
    return f"{bridge_id}-jms-bridge-health"


# The JMS states the job writes there, and the operator reads.
JMS_RECONNECTING = "Reconnecting"
JMS_CONNECTED = "Connected"


def lease_holder_identity(instance: str, pod: str) -> str:
    """The Lease's `holderIdentity`: `<instance>/<pod>`, so a reader sees which instance is active."""
    return f"{instance}/{pod}"
