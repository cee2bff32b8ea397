"""A JmsBridge's spec: the JMS and Kafka connections, routing defaults, delivery, failover, Spark sizing."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bridge_job.config.pod_security import ContainerSecurityContext, PodSecurityContext
from bridge_job.config.schema import (
    BRIDGE_ID_PATTERN,
    JOB_IMAGE,
    NAME_PATTERN,
    NATS_URL_PATTERN,
    REGISTRY_URL_PATTERN,
    BeanValue,
    CamelModel,
    Delivery,
    DestinationName,
    Rule,
    SaslMechanism,
    SecurityProtocol,
    SoftFailurePolicy,
    SubjectNameStrategy,
    TopicName,
    cel_rules,
    exactly_one,
    exactly_one_rule,
)
from bridge_job.config.spark_settings import OWNED_SETTINGS, REFUSED_PREFIXES, refused_setting
from bridge_job.redaction import SECRET_KEY_RE2, USER_INFO_RE2


class SecretRef(CamelModel):
    """A Secret holding a username and a password; the values never leave the Secret."""

    name: Annotated[str, Field(pattern=NAME_PATTERN, max_length=253)]
    """The Secret's name, in the bridge's namespace."""
    username_key: str = "username"
    """The Secret's key holding the username."""
    password_key: str = "password"
    """The Secret's key holding the password."""


class ConnectionFactorySpec(CamelModel):
    """Any JMS provider: the ConnectionFactory class and the bean properties to set on it."""

    class_name: Annotated[str, Field(pattern=r"^[A-Za-z_$][A-Za-z0-9_$.]*$")]
    """The provider's javax.jms.ConnectionFactory class, e.g.
    org.apache.activemq.ActiveMQConnectionFactory; its jars must be on the job's JMS classpath."""
    properties: Annotated[dict[str, BeanValue], Field(max_length=128)] = Field(default_factory=dict)
    """Bean properties set on the factory through their setters (brokerURL, hostName, port,
    queueManager...), each an integer or a text ("true", "0.5"); credentials go in credentialsSecretRef."""


class JndiSpec(CamelModel):
    """Look the ConnectionFactory up in JNDI instead of constructing it."""

    initial_context_factory: str
    """The JNDI provider's InitialContextFactory class (java.naming.factory.initial)."""
    provider_url: str
    """The JNDI provider's URL (java.naming.provider.url)."""
    connection_factory_name: str = "ConnectionFactory"
    """The name the ConnectionFactory is bound to in JNDI."""
    environment: Annotated[dict[str, Annotated[str, Field(max_length=4096)]], Field(max_length=128)] = Field(
        default_factory=dict
    )
    """More JNDI environment entries for the InitialContext."""


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
    """A queue to consume."""
    topic: DestinationName | None = None
    """A topic to consume, through the durable subscription `durableSubscription`."""
    durable_subscription: Annotated[str, Field(min_length=1, max_length=255)] | None = None
    """A topic's durable subscription name (with jms.clientId): messages published while the bridge is
    down wait in it."""
    selector: str | None = None
    """A JMS message selector: only the messages it selects are consumed."""

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
    """The most messages taken off JMS in one transaction (one journal write)."""
    max_batch_delay_ms: Annotated[int, Field(ge=1, le=60_000)] = 100
    """The longest a batch stays open. A batch takes the messages already waiting and closes as soon as
    none is (no message waits for others); while they keep coming, it closes this long after its first."""


class ClientLibrary(CamelModel):
    """An image holding a JMS provider's client jars. An init container of every driver and executor pod
    copies them (`cp`, so the image needs one) into the job's JMS library directory, `JMS_LIBRARY_DIR`.
    """

    image: Annotated[str, Field(min_length=1)]
    """The image holding the jars (pulled with spec.spark.pod.imagePullSecrets)."""
    path: Annotated[str, Field(pattern=r"^/\S*$")] = Field(
        default="/jars",
        description="The directory in the image whose jars are copied (not its subdirectories).",
    )
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"
    """The init container's imagePullPolicy."""


class OutagesSpec(CamelModel):
    """How long the job waits out a system that does not answer: one patience for all of them."""

    patience_seconds: Annotated[int, Field(ge=0, le=7 * 24 * 3600)] = Field(
        default=300,
        description="Seconds the job waits for an unreachable system (the JMS broker, Kafka, the Kubernetes "
        "API) before it stops with exit 2 and a line naming it; meanwhile it retries with backoff, rolls "
        "back what it cannot finish, reports the outage in the bridge's status and carries on once the "
        "system answers again.",
    )


def moved(document: Any, old: str, where: str) -> None:
    """A clear refusal of a setting that `spec.outages.patienceSeconds` replaced."""
    if isinstance(document, dict) and old in document:
        raise ValueError(
            f"`{where}` was replaced by `spec.outages.patienceSeconds` (one patience for every system "
            "the job talks to): move the value there"
        )


class SecretKeyRef(CamelModel):
    """One key of a Secret; the value never leaves the Secret."""

    name: Annotated[str, Field(pattern=NAME_PATTERN, max_length=253)]
    """The Secret's name, in the bridge's namespace."""
    key: Annotated[str, Field(pattern=r"^[-._a-zA-Z0-9]{1,253}$")]
    """The Secret's key holding the value."""


MountedFile = Annotated[str, Field(pattern=r"^/\S+$", max_length=4096)]
TLS_PAIR_MESSAGE = "set `certFile` and `keyFile` together (a client certificate and its key), or neither"


JMS_KEY_STORE_PAIR = (
    "set `keyStoreFile` and `keyStorePasswordSecretRef` together (a client certificate), or neither"
)
JMS_TRUST_STORE_PASSWORD_ALONE = "`trustStorePasswordSecretRef` needs `trustStoreFile`"


class JmsTlsSpec(CamelModel):
    """TLS to the JMS broker: the stores of the JMS client's JVM (its javax.net.ssl settings), which
    ActiveMQ's ssl:// URLs, Artemis' sslEnabled=true and IBM MQ's cipher suites use when the factory names
    no store of its own. Mount the Secret holding the files with `spec.spark.pod.volumes` and
    `volumeMounts` (docs/jms.md); their passwords come from Secrets too."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            Rule("has(self.keyStoreFile) == has(self.keyStorePasswordSecretRef)", JMS_KEY_STORE_PAIR),
            Rule(
                "!has(self.trustStorePasswordSecretRef) || has(self.trustStoreFile)",
                JMS_TRUST_STORE_PASSWORD_ALONE,
            ),
        )
    )

    trust_store_file: MountedFile | None = Field(
        default=None,
        description="A PKCS12 or JKS store of the CA certificate(s) that signed the broker's; none: the "
        "JVM's own CAs.",
    )
    trust_store_password_secret_ref: SecretKeyRef | None = Field(
        default=None, description="A Secret key holding the trust store's password, if it has one."
    )
    key_store_file: MountedFile | None = Field(
        default=None,
        description="A PKCS12 or JKS store of the bridge's client certificate and its key, for a broker "
        "that asks for one (mutual TLS).",
    )
    key_store_password_secret_ref: SecretKeyRef | None = Field(
        default=None, description="A Secret key holding the key store's password (also its key's)."
    )

    @model_validator(mode="after")
    def _pairs(self) -> Self:
        if (self.key_store_file is None) != (self.key_store_password_secret_ref is None):
            raise ValueError(JMS_KEY_STORE_PAIR)
        if self.trust_store_password_secret_ref is not None and self.trust_store_file is None:
            raise ValueError(JMS_TRUST_STORE_PASSWORD_ALONE)
        return self


class JmsSpec(CamelModel):
    # Sources listed twice stay an operator check (InvalidSpec): a CEL rule comparing every pair of an
    # unbounded list is over the API server's cost budget.
    model_config = ConfigDict(json_schema_extra=cel_rules(exactly_one_rule("connectionFactory", "jndi")))

    connection_factory: ConnectionFactorySpec | None = None
    jndi: JndiSpec | None = None
    credentials_secret_ref: SecretRef | None = None
    """A Secret holding the JMS user and password (keys username and password unless named otherwise)."""
    tls: JmsTlsSpec | None = Field(default=None, description="TLS stores for the JMS client (docs/jms.md).")
    client_id: str | None = None
    """The JMS connection's client id; needed for topics' durable subscriptions."""
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
    """The queues and topics the bridge consumes, each through the journal to the routes."""
    reply_queue: DestinationName | None = Field(
        default=None,
        description="One of the queue `sources`: where JMS services answer requests that came from Kafka "
        "(the JMSReplyTo of kafkaToJms routes with `reply`); its messages go to the reply topic each names.",
    )
    ingest: IngestSpec = Field(default_factory=IngestSpec)

    @model_validator(mode="before")
    @classmethod
    def _reconnect_moved(cls, document: Any) -> Any:
        moved(document, "reconnect", "jms.reconnect.windowSeconds")
        return document

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
    """The SASL mechanism."""
    credentials_secret_ref: SecretRef
    """A Secret holding the SASL username and password; the operator's Kafka checks read it too."""
    allow_clear_text: bool = Field(
        default=False,
        description="Accept securityProtocol SASL_PLAINTEXT: the password (PLAIN) or what an eavesdropper "
        "needs to guess it offline (SCRAM) crosses the network without TLS. Only where the network is "
        "trusted; otherwise use SASL_SSL.",
    )


CLEAR_TEXT_REFUSED = (
    "securityProtocol SASL_PLAINTEXT sends the SASL credentials without TLS: use SASL_SSL, or set "
    "sasl.allowClearText: true where the network is trusted"
)


class RegistryTlsSpec(CamelModel):
    """TLS to an https schema registry, from files in the pods (mounted as for Kafka's TLS)."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(Rule("has(self.certFile) == has(self.keyFile)", TLS_PAIR_MESSAGE))
    )

    ca_file: MountedFile | None = Field(
        default=None, description="The CA certificate(s) that signed the registry's; none: the image's CAs."
    )
    cert_file: MountedFile | None = Field(default=None, description="A client certificate (mutual TLS).")
    key_file: MountedFile | None = Field(default=None, description="The client certificate's key.")

    @model_validator(mode="after")
    def _pair(self) -> Self:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError(TLS_PAIR_MESSAGE)
        return self


class SchemaRegistrySpec(CamelModel):
    """A Confluent-compatible schema registry (Confluent's, Apicurio's `/apis/ccompat/v7`, Karapace), for the
    routes of format `avro` and `jsonSchema` (docs/formats.md). The bridge registers its schemas there and
    reads writers' schemas by id; an unreachable registry is waited out for `spec.outages.patienceSeconds`."""

    url: Annotated[str, Field(pattern=REGISTRY_URL_PATTERN, max_length=2048)] = Field(
        description="http(s)://host:port[/path] of the registry's Confluent API (no credentials: they come "
        "from a Secret)."
    )
    credentials_secret_ref: SecretRef | None = Field(
        default=None, description="A Secret holding the registry's HTTP Basic username and password."
    )
    tls: RegistryTlsSpec | None = Field(default=None, description="TLS files for an https registry.")
    subject_name_strategy: SubjectNameStrategy = Field(
        default=SubjectNameStrategy.TOPIC_NAME,
        description="The subjects the schemas are registered under: TopicName (<topic>-key, <topic>-value), "
        "RecordName (the record's name) or TopicRecordName (<topic>-<record name>).",
    )


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
            Rule(
                "self.securityProtocol != 'SASL_PLAINTEXT' || !has(self.sasl) || "
                "(has(self.sasl.allowClearText) && self.sasl.allowClearText)",
                CLEAR_TEXT_REFUSED,
                "securityProtocol",
            ),
        )
    )

    bootstrap_servers: Annotated[str, Field(min_length=1)]
    """host:port[,host:port...] of the Kafka cluster (no credentials: they go in sasl)."""
    security_protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    """How the clients connect: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (SASL needs `sasl`; TLS files
    go in properties, mounted from Secrets)."""
    sasl: SaslSpec | None = None
    """SASL authentication, for securityProtocol SASL_PLAINTEXT or SASL_SSL."""
    journal_topic: TopicName | None = Field(
        default=None, description="Defaults to `<bridgeId>.jms-bridge.journal`."
    )
    create_journal_topic: bool = False
    """Create the journal topic when it is missing (the operator's check, or the job at start); otherwise
    a missing journal is a hard failure."""
    journal_partitions: Annotated[int, Field(ge=1, le=1000)] = 1
    """The journal topic's partitions, when the bridge creates it."""
    schema_registry: SchemaRegistrySpec | None = Field(
        default=None, description="The schema registry of routes with format avro or jsonSchema."
    )
    properties: Annotated[dict[str, Annotated[str, Field(max_length=4096)]], Field(max_length=128)] = Field(
        default_factory=dict,
        description="Extra librdkafka settings for every Kafka client of the bridge (the job's and the "
        "operator's checks). The fields above and the bridge's guarantees (allow.auto.create.topics=false; "
        "idempotent producers with acks=all) take precedence over them.",
    )

    @model_validator(mode="before")
    @classmethod
    def _startup_timeout_moved(cls, document: Any) -> Any:
        moved(document, "startupTimeoutSeconds", "kafka.startupTimeoutSeconds")
        return document

    @model_validator(mode="after")
    def _sasl_needs_protocol(self) -> Self:
        uses_sasl = self.security_protocol in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)
        if uses_sasl and self.sasl is None:
            raise ValueError(f"securityProtocol {self.security_protocol.value} needs `sasl`")
        if self.sasl is not None and not uses_sasl:
            raise ValueError("`sasl` needs securityProtocol SASL_PLAINTEXT or SASL_SSL")
        clear_text = self.security_protocol is SecurityProtocol.SASL_PLAINTEXT
        if clear_text and self.sasl is not None and not self.sasl.allow_clear_text:
            raise ValueError(CLEAR_TEXT_REFUSED)
        return self


class NatsTlsSpec(CamelModel):
    """TLS to the NATS servers, from files in the pods (mount the Secret holding them with
    `spec.spark.pod.volumes` and `volumeMounts`, as for Kafka's TLS)."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            Rule(
                "has(self.certFile) == has(self.keyFile)",
                TLS_PAIR_MESSAGE,
            )
        )
    )

    ca_file: MountedFile = Field(description="The CA certificate(s) that signed the servers' certificates.")
    cert_file: MountedFile | None = Field(default=None, description="A client certificate (mutual TLS).")
    key_file: MountedFile | None = Field(default=None, description="The client certificate's key.")

    @model_validator(mode="after")
    def _pair(self) -> Self:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError(
                "set `certFile` and `keyFile` together (a client certificate and its key), or neither"
            )
        return self


ONE_NATS_CREDENTIAL = "set one of `credentialsSecretRef`, `tokenSecretRef` and `credsSecretRef`, not more"


class NatsSpec(CamelModel):
    """The NATS servers of the natsToJms routes (docs/nats.md). Unreachable servers are waited out for
    `spec.outages.patienceSeconds`, as every other system is."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            Rule(
                "(has(self.credentialsSecretRef) ? 1 : 0) + (has(self.tokenSecretRef) ? 1 : 0)"
                " + (has(self.credsSecretRef) ? 1 : 0) <= 1",
                ONE_NATS_CREDENTIAL,
            )
        )
    )

    servers: Annotated[list[Annotated[str, Field(pattern=NATS_URL_PATTERN)]], Field(min_length=1)] = Field(
        description="nats://host:port (or tls://) URLs of the NATS cluster (no credentials: they come from a "
        "Secret)."
    )
    credentials_secret_ref: SecretRef | None = Field(
        default=None, description="A Secret holding the NATS user and password."
    )
    token_secret_ref: SecretKeyRef | None = Field(
        default=None, description="A Secret key holding a NATS authentication token."
    )
    creds_secret_ref: SecretKeyRef | None = Field(
        default=None,
        description="A Secret key holding a `.creds` file, as `nsc` writes it: the user's JWT and NKEY seed "
        "(decentralized JWT authentication).",
    )
    tls: NatsTlsSpec | None = Field(default=None, description="TLS to the servers (docs/nats.md).")

    @model_validator(mode="after")
    def _one_credential(self) -> Self:
        given = (self.credentials_secret_ref, self.token_secret_ref, self.creds_secret_ref)
        if sum(ref is not None for ref in given) > 1:
            raise ValueError(ONE_NATS_CREDENTIAL)
        return self


class RoutingSpec(CamelModel):
    dead_letter_topic: TopicName | None = None
    """Where soft failures (no route, a conversion error, a message too large) go with onSoftFailure
    deadLetter."""
    on_soft_failure: SoftFailurePolicy = SoftFailurePolicy.FAIL
    """What a soft failure (no route, a conversion error) does: fail stops the bridge, skip counts and
    drops the message, deadLetter writes it to deadLetterTopic."""


class FailoverSpec(CamelModel):
    standby: bool = False
    """Run two instances (primary and secondary SparkApplications): the standby holds no Lease and takes
    over when the active one stops renewing it (docs/failover.md)."""
    lease_duration_seconds: Annotated[int, Field(ge=2, le=300)] = 10
    """The Lease's duration: a standby takes over this long after the active instance's last renewal
    (renewed every third of it)."""


class ResourcesSpec(CamelModel):
    cores: Annotated[int, Field(ge=1, le=64)] = 1
    """CPU cores of the pod's Spark container."""
    memory: Annotated[str, Field(pattern=r"^[0-9]+[kmgt]?$")] = "1g"
    """Memory of the pod's Spark JVM, as Spark writes it (512m, 1g)."""


class ExecutorSpec(ResourcesSpec):
    instances: Annotated[int, Field(ge=1, le=100)] = 1
    """How many executor pods."""


class CheckpointSpec(CamelModel):
    path: str = "/var/lib/jmsbridge/checkpoints"
    """The directory of the Spark checkpoints in the pods, where persistentVolumeClaim is mounted."""
    persistent_volume_claim: Annotated[str, Field(pattern=NAME_PATTERN, max_length=253)] | None = None
    """A claim mounted at path, so that checkpoints survive pod restarts; a standby pair shares it
    (ReadWriteMany)."""


KUBE_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"


KubeName = Annotated[str, Field(pattern=KUBE_NAME_PATTERN, max_length=63)]


# Volume and environment names of the operator's own (the config, the checkpoints, the JMS jars, the
# credentials): a bridge's pod settings cannot take them.
RESERVED_VOLUME_PREFIX = "jmsbridge-"


RESERVED_ENV_PREFIX = "JMSBRIDGE_"


class VolumeMount(CamelModel):
    name: KubeName
    """The volume's name, one of `volumes`."""
    mount_path: Annotated[str, Field(pattern=r"^/")]
    """Where the volume appears in the Spark containers."""
    sub_path: str | None = None
    """A path inside the volume to mount instead of its root."""
    read_only: bool | None = None
    """Mount it read-only."""


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
    """The variable's name (not JMSBRIDGE_*: those are the operator's)."""
    value: str | None = None
    """The variable's value."""
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
    """The taint key the toleration applies to; empty with Exists: every taint."""
    operator: Literal["Exists", "Equal"] | None = None
    """Exists or Equal (the default)."""
    value: str | None = None
    """The taint value to match (with Equal)."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    """The taint effect to match; empty: every effect."""
    toleration_seconds: int | None = None
    """With NoExecute: how long the pod stays bound after the taint appears."""


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

    name: KubeName = Field(description="The volume's name, which volumeMounts refer to.")

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
    """Secrets to pull the job image and the clientLibraries images with."""
    node_selector: Annotated[dict[str, str], Field(max_length=64)] = Field(default_factory=dict)
    """Node labels the pods must run on."""
    tolerations: Annotated[list[Toleration], Field(max_length=32)] = Field(default_factory=list)
    """Taints the pods tolerate."""
    env: Annotated[list[EnvVar], Field(max_length=64)] = Field(default_factory=list)
    """More environment variables of the Spark containers."""
    volumes: Annotated[list[Volume], Field(max_length=32)] = Field(default_factory=list)
    """Volumes of the driver and executor pods, passed on as given (Secrets holding TLS files, say); the
    operator's Kafka checks read the Secret and ConfigMap ones that spec.kafka.properties name."""
    volume_mounts: Annotated[list[VolumeMount], Field(max_length=32)] = Field(default_factory=list)
    """Where `volumes` are mounted in the Spark containers."""
    security_context: PodSecurityContext | None = Field(
        default=None,
        description="The pods' securityContext: each field set replaces the operator's default for it "
        "(the Pod Security Standard restricted: uid 185, runAsNonRoot, seccomp RuntimeDefault).",
    )
    container_security_context: ContainerSecurityContext | None = Field(
        default=None,
        description="The securityContext of the Spark containers and the jar-copy init containers: each "
        "field set replaces the operator's default for it (no privilege escalation, capabilities "
        "dropped).",
    )

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
            ),
            Rule(
                "!has(self.sparkConf) || self.sparkConf.all(k, "
                + " && ".join(f"!k.startsWith('{prefix}')" for prefix in REFUSED_PREFIXES)
                + ")",
                f"sparkConf cannot set {', '.join(p + '*' for p in REFUSED_PREFIXES)}: they choose the job's "
                "namespace, identity, credentials, images and submission, which are "
                "the operator's (use spec.spark.image, serviceAccount, pod)",
                "sparkConf",
            ),
        )
    )

    image: str | None = Field(
        default=None,
        description="The job's image; defaults to the operator's job image "
        f"({JOB_IMAGE}:<the operator's version>, or the one its chart names), so that an operator upgrade "
        "moves the bridge to its job image (a rollout, standby first).",
    )
    spark_version: str = "4.3.0"
    """The Spark version of the job image (the SparkApplication's sparkVersion)."""
    service_account: str | None = None
    """The service account of the Spark pods: one the platform team lists in the chart's
    bridgePolicy.serviceAccounts; default the bridge's own, which the operator creates."""
    driver: ResourcesSpec = Field(default_factory=ResourcesSpec)
    """The driver pod's cores and memory."""
    executor: ExecutorSpec = Field(default_factory=ExecutorSpec)
    """The executor pods' number, cores and memory."""
    checkpoint: CheckpointSpec = Field(default_factory=CheckpointSpec)
    """Where the job keeps its Spark checkpoints."""
    mode: Literal["realTime", "microBatch"] = Field(
        default="realTime",
        description="realTime: one long-running task per partition moves records as they arrive (latency "
        "in milliseconds), for taskIntervalSeconds at a time; microBatch: Spark plans a bounded batch at "
        "most every triggerIntervalMs (latency about a batch). docs/egress.md compares them.",
    )
    task_interval_seconds: Annotated[int, Field(ge=1, le=3600)] = Field(
        default=30,
        description="realTime: how long each task runs before Spark checkpoints and starts the next "
        "interval's tasks; a new topic or partition of a kafkaToJms pattern is read from the next interval.",
    )
    trigger_interval_ms: Annotated[int, Field(ge=0, le=600_000)] = Field(
        default=500, description="microBatch: the least time between batch starts."
    )
    max_records_per_batch: Annotated[int, Field(ge=1, le=10_000_000)] = 20_000
    """The most journal (or kafkaToJms topic) records one micro-batch reads."""
    dedup_window_seconds: Annotated[int, Field(ge=1, le=7 * 24 * 3600)] = Field(
        default=600,
        description="How far back (by journal time) a redelivered JMS message is looked for in the journal.",
    )
    on_data_loss: Literal["fail", "skip"] = Field(
        default="fail",
        description="Records that left the journal or a kafkaToJms topic (retention, deleted records) "
        "before the bridge read them: fail stops the bridge; skip counts them (jmsbridge_records_lost) "
        "and goes on from what is left.",
    )
    spark_conf: Annotated[dict[str, str], Field(max_length=64)] | None = Field(
        default=None,
        description="Spark settings added to the job's own; extraJavaOptions are appended to the job's, "
        "and the settings the job needs for its guarantees cannot be set.",
    )
    pod: PodSettings | None = None
    """What every driver and executor pod gets besides the operator's settings: volumes, environment,
    scheduling, pull secrets, securityContext."""

    @model_validator(mode="after")
    def _conf_leaves_ours(self) -> Self:
        refused = [
            why
            for key, value in sorted((self.spark_conf or {}).items())
            if (why := refused_setting(key, value))
        ]
        if refused:
            raise ValueError("; ".join(refused))
        return self


class TelemetrySpec(CamelModel):
    port: Annotated[int, Field(ge=0, le=65535)] = 9464
    """The port of the job's Prometheus metrics endpoint in the driver (/metrics); 0: none."""


class SecuritySpec(CamelModel):
    allow_inline_credentials: bool = Field(
        default=False,
        description="Accept credentials in connection factory properties, the JNDI environment, Kafka "
        "properties and URLs with a warning instead of refusing the bridge. They are then stored in plain "
        "text in the job's ConfigMap: prefer credentialsSecretRef and kafka.sasl.",
    )


_ALLOWED = (
    "(has(self.security) && has(self.security.allowInlineCredentials) "
    "&& self.security.allowInlineCredentials)"
)
_SWITCH = "or set spec.security.allowInlineCredentials"
_NO_SECRET_KEY = f"!k.matches('{SECRET_KEY_RE2}')"
_NO_USER_INFO = "!{}.matches('" + USER_INFO_RE2 + "')"
# What the operator refuses as CredentialsInSpec (validation.py), as CEL can see it: the keys and values of
# the connection factory's properties, the Kafka properties and the JNDI environment, the bootstrap
# servers, the JNDI provider URL. A factory property is an integer or a string (`dyn` to CEL): only a
# string is matched.
_FACTORY_PROPERTY = "self.jms.connectionFactory.properties[k]"
CREDENTIAL_RULES = (
    Rule(
        f"{_ALLOWED} || !has(self.jms.connectionFactory) || !has(self.jms.connectionFactory.properties) || "
        f"self.jms.connectionFactory.properties.all(k, {_NO_SECRET_KEY} && (type({_FACTORY_PROPERTY}) != "
        f"string || {_NO_USER_INFO.format(f'string({_FACTORY_PROPERTY})')}))",
        "a credential in spec.jms.connectionFactory.properties (a password-like key or user:password@ in a "
        f"URL): put it in the Secret named by spec.jms.credentialsSecretRef, {_SWITCH}",
        "jms",
    ),
    Rule(
        f"{_ALLOWED} || !has(self.kafka.properties) || self.kafka.properties.all(k, {_NO_SECRET_KEY} && "
        f"{_NO_USER_INFO.format('self.kafka.properties[k]')})",
        "a credential in spec.kafka.properties (a password-like key or user:password@ in a URL): put it in "
        f"the Secret named by spec.kafka.sasl.credentialsSecretRef, {_SWITCH}",
        "kafka",
    ),
    Rule(
        f"{_ALLOWED} || {_NO_USER_INFO.format('self.kafka.bootstrapServers')}",
        f"user:password@ in spec.kafka.bootstrapServers: use spec.kafka.sasl, {_SWITCH}",
        "kafka",
    ),
    Rule(
        f"{_ALLOWED} || !has(self.jms.jndi) || ({_NO_USER_INFO.format('self.jms.jndi.providerUrl')} && "
        "(!has(self.jms.jndi.environment) || self.jms.jndi.environment.all(k, "
        f"{_NO_SECRET_KEY} && {_NO_USER_INFO.format('self.jms.jndi.environment[k]')})))",
        "a credential in spec.jms.jndi (a password-like key or user:password@ in a URL): put it in the "
        f"Secret named by spec.jms.credentialsSecretRef, {_SWITCH}",
        "jms",
    ),
    Rule(
        "!has(self.kafka.properties) || !('sasl.password' in self.kafka.properties)",
        "sasl.password in spec.kafka.properties is never used: spec.kafka.sasl sets it from its Secret",
        "kafka",
    ),
)


# The journal topic, the consumer groups, the transactional ids and the Lease are named after the bridge
# id: a new id would be a new bridge on the same JMS destinations, the old journal's records unread. The
# API server keeps it as created (transition rules: checked on updates, against the stored object); the
# operator refuses a change it did not (acceptance.py: a CRD older than the rule, no CEL).
BRIDGE_ID_FIXED = (
    "bridgeId cannot change after creation (the journal topic, consumer groups, transactional ids and "
    "Lease are named after it): create a new JmsBridge instead"
)
BRIDGE_ID_RULES = (
    Rule(
        "has(self.bridgeId) == has(oldSelf.bridgeId)",
        BRIDGE_ID_FIXED + "; it cannot be set or removed either",
        "bridgeId",
    ),
)


class JmsBridgeSpec(CamelModel):
    model_config = ConfigDict(json_schema_extra=cel_rules(*CREDENTIAL_RULES, *BRIDGE_ID_RULES))

    bridge_id: Annotated[str, Field(pattern=BRIDGE_ID_PATTERN, max_length=40)] | None = Field(
        default=None,
        description="Names the journal topic, consumer groups, transactional ids and Lease; defaults to "
        "<metadata.namespace>-<metadata.name> (a bridge that ran keeps the id in its status). Fixed at "
        "creation.",
        json_schema_extra=cel_rules(Rule("self == oldSelf", BRIDGE_ID_FIXED)),
    )
    jms: JmsSpec
    """The JMS provider, the connection and the destinations the bridge consumes."""
    kafka: KafkaSpec
    """The Kafka cluster: connection, security and the journal topic."""
    nats: NatsSpec | None = Field(default=None, description="Needed by natsToJms routes.")
    routing: RoutingSpec = Field(default_factory=RoutingSpec)
    """What happens to messages that fail softly (no route, a conversion error), unless a route says
    otherwise."""
    delivery: Delivery = Delivery.AT_LEAST_ONCE
    """atLeastOnce (idempotent producers), or exactlyOnce (each range written to Kafka in one transaction with
    its progress; docs/egress.md)."""
    failover: FailoverSpec = Field(default_factory=FailoverSpec)
    """A standby instance, and its Lease."""
    outages: OutagesSpec = Field(default_factory=OutagesSpec)
    spark: SparkSpec = Field(default_factory=SparkSpec)
    """The job's image, Spark sizing, checkpoints, mode and pod settings."""
    telemetry: TelemetrySpec = Field(default_factory=TelemetrySpec)
    """The job's metrics endpoint."""
    security: SecuritySpec = Field(default_factory=SecuritySpec)
    """Whether credentials outside Secrets are accepted."""
    suspend: bool = False
    """Stop the bridge: its SparkApplications are deleted while true (the checkpoints and the journal
    stay), and it starts again when false."""
    restart_nonce: Annotated[str, Field(max_length=253)] | None = Field(
        default=None,
        description="Any new value restarts the bridge's instances, the standby first (as any change of "
        "the spec does): e.g. a timestamp. A Secret its pods use that changed rolls the bridge by itself "
        "(the operator's Secret checks).",
    )
