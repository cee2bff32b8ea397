"""Admission-time validation: the CEL rules in the generated CRDs reject what the models reject.

One table of cases drives both sides. Each case breaks one cross-field rule of an otherwise valid resource;
the pydantic model (what the operator and `jmsbridge validate` use) must reject it at a field path, and the
real API server, with our CRDs installed, must refuse it at the same path (or at the field inside it that
the rule's `fieldPath` names, which is what `kubectl apply` shows) with the rule's message, while
the CRD's structural schema alone accepts it (so it is the CEL rule that catches it).

The server evaluates the rules as it does at `kubectl apply`: defaults first, then every rule within its
cost budget, in dry runs (`dryRun=All`: nothing is stored). Transition rules (those naming `oldSelf`:
`bridgeId` fixed at creation) run on an update of a stored object.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

import pydantic
import pytest

import bridge_job.config as config_models
from bridge_job.config import JmsBridge, JmsBridgeRoute, field_errors
from testbed.apiserver.client import KubeApi, KubeApiError
from testbed.resources import simple_bridge
from tests.operator.helpers import CRD_DIR, EXAMPLES, load_yaml, route, schema_errors

BRIDGE_CRD = CRD_DIR / "jmsbridge.dev_jmsbridges.yaml"
ROUTE_CRD = CRD_DIR / "jmsbridge.dev_jmsbridgeroutes.yaml"
VALIDATIONS = "x-kubernetes-validations"


# ---------------------------------------------------------------------------------------------------
# The API server's side: dry runs against the real server with our CRDs


@pytest.fixture(scope="module")
def server(control_plane: KubeApi) -> KubeApi:
    control_plane.install_crds(BRIDGE_CRD, ROUTE_CRD)
    return control_plane


def _dotted(field: str) -> str:
    """The server's field path (`spec.jms.sources[0]`) as the models write it (`spec.jms.sources.0`)."""
    return re.sub(r"\[(\d+)\]", r".\1", field)


def _causes(error: KubeApiError) -> list[tuple[str, str]]:
    assert error.status == 422, error
    return [(_dotted(c.get("field", "")), c["message"]) for c in error.body["details"]["causes"]]


def server_rejections(
    kube: KubeApi, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None
) -> list[tuple[str, str]]:
    """(field, message) of each reason the API server gives for refusing `obj`: a create, or with `old`
    an update of the stored `old` (which runs the transition rules too)."""
    body = copy.deepcopy(dict(obj))
    body["metadata"] = {**body["metadata"], "namespace": "default"}
    if old is not None:
        stored = copy.deepcopy(dict(old))
        stored["metadata"] = dict(body["metadata"])
        kube.create(stored)
    try:
        if old is None:
            kube.create(body, dry_run=True)
        else:
            kube.replace(body, dry_run=True)
    except KubeApiError as error:
        return _causes(error)
    finally:
        if old is not None:
            kube.delete(body["apiVersion"], body["kind"], body["metadata"]["name"], "default")
    return []


def model_rejections(model: type[pydantic.BaseModel], obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    try:
        model.model_validate(obj)
    except pydantic.ValidationError as error:
        return field_errors(error)
    return []


# ---------------------------------------------------------------------------------------------------
# One table


Change = Callable[[dict[str, Any]], None]


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    kind: str  # JmsBridge or JmsBridgeRoute
    change: Change  # breaks one rule of a valid resource
    at: str  # the dotted path both sides name
    says: str  # a part of the message both sides give


DROP = object()


def _nats_route(then: Callable[[dict[str, Any]], object]) -> Change:
    """The route made a valid natsToJms route, then changed by `then`."""

    def change(body: dict[str, Any]) -> None:
        spec = body["spec"]
        spec.pop("kafkaTopic", None)
        spec.update(direction="natsToJms", natsSubject="svc.>", jmsDestination={"queue": "q"})
        then(spec)

    return change


def _set(path: str, value: Any) -> Change:
    """Set the field at a dotted path (list indexes as numbers); `DROP` removes it."""

    def change(body: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = body
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        key: Any = int(last) if isinstance(node, list) else last
        if value is DROP:
            del node[key]
        else:
            node[key] = value

    return change


def _both(*changes: Change) -> Change:
    def change(body: dict[str, Any]) -> None:
        for each in changes:
            each(body)

    return change


TLS = {"name": "tls", "secret": {"secretName": "kafka-ca"}}
CASES = [
    Case(
        "queue-and-topic",
        "JmsBridge",
        _set("spec.jms.sources.0.topic", "t"),
        "spec.jms.sources.0",
        "set exactly one of `queue` or `topic`",
    ),
    Case(
        "neither-queue-nor-topic",
        "JmsBridge",
        _set("spec.jms.sources.0", {"selector": "a > 1"}),
        "spec.jms.sources.0",
        "set exactly one of `queue` or `topic`",
    ),
    Case(
        "topic-without-durable-subscription",
        "JmsBridge",
        _set("spec.jms.sources.0", {"topic": "prices"}),
        "spec.jms.sources.0",
        "needs `durableSubscription`",
    ),
    Case(
        "queue-with-durable-subscription",
        "JmsBridge",
        _set("spec.jms.sources.0.durableSubscription", "s"),
        "spec.jms.sources.0",
        "`durableSubscription` applies to topics only",
    ),
    Case(
        "factory-and-jndi",
        "JmsBridge",
        _set("spec.jms.jndi", {"initialContextFactory": "x.Factory", "providerUrl": "tcp://jndi:1"}),
        "spec.jms",
        "set exactly one of `connectionFactory` or `jndi`",
    ),
    Case(
        "no-factory",
        "JmsBridge",
        _set("spec.jms.connectionFactory", DROP),
        "spec.jms",
        "set exactly one of `connectionFactory` or `jndi`",
    ),
    Case(
        "sasl-protocol-without-sasl",
        "JmsBridge",
        _set("spec.kafka.securityProtocol", "SASL_SSL"),
        "spec.kafka",
        "needs `sasl`",
    ),
    Case(
        "sasl-without-sasl-protocol",
        "JmsBridge",
        _set("spec.kafka.sasl", {"credentialsSecretRef": {"name": "kafka-user"}}),
        "spec.kafka",
        "`sasl` needs securityProtocol SASL_PLAINTEXT or SASL_SSL",
    ),
    Case(
        "spark-conf-takes-a-guarantee",
        "JmsBridge",
        _set("spec.spark.sparkConf", {"spark.speculation": "true"}),
        "spec.spark",
        "sparkConf cannot set",
    ),
    Case(  # PLAIN's password, or SCRAM's exchange to guess it from, on the wire without TLS
        "clear-text-credentials",
        "JmsBridge",
        _set(
            "spec.kafka",
            {
                "bootstrapServers": "k:9092",
                "securityProtocol": "SASL_PLAINTEXT",
                "sasl": {"mechanism": "PLAIN", "credentialsSecretRef": {"name": "kafka-user"}},
            },
        ),
        "spec.kafka",
        "SASL_PLAINTEXT sends the SASL credentials without TLS: use SASL_SSL, or set sasl.allowClearText",
    ),
    # A bridge author aiming at another namespace, service account or the API server's credentials.
    Case(
        "spark-conf-chooses-the-namespace",
        "JmsBridge",
        _set("spec.spark.sparkConf", {"spark.kubernetes.namespace": "payments"}),
        "spec.spark",
        "spark.kubernetes.",  # the model names the key, the CRD's rule the families
    ),
    Case(
        "spark-conf-chooses-credentials",
        "JmsBridge",
        _set("spec.spark.sparkConf", {"spark.kubernetes.authenticate.driver.serviceAccountName": "admin"}),
        "spec.spark",
        "spark.kubernetes.",
    ),
    Case(
        "spark-conf-turns-rpc-authentication-off",
        "JmsBridge",
        _set("spec.spark.sparkConf", {"spark.authenticate": "false"}),
        "spec.spark",
        "spark.authenticate",
    ),
    Case(
        "env-takes-a-credential-name",
        "JmsBridge",
        _set("spec.spark.pod", {"env": [{"name": "JMSBRIDGE_KAFKA_PASSWORD", "value": "x"}]}),
        "spec.spark.pod.env.0",
        "set by the operator",
    ),
    Case(
        "env-value-and-value-from",
        "JmsBridge",
        _set(
            "spec.spark.pod",
            {"env": [{"name": "A", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]},
        ),
        "spec.spark.pod.env.0",
        "set `value` or `valueFrom`, not both",
    ),
    Case(
        "volume-takes-a-reserved-name",
        "JmsBridge",
        _set("spec.spark.pod", {"volumes": [{"name": "jmsbridge-config", "emptyDir": {}}]}),
        "spec.spark.pod.volumes.0",
        "are the operator's",
    ),
    Case(
        "mount-without-volume",
        "JmsBridge",
        _set(
            "spec.spark.pod", {"volumes": [TLS], "volumeMounts": [{"name": "tls-typo", "mountPath": "/tls"}]}
        ),
        "spec.spark.pod",
        "every volumeMount names a volume of `volumes`",
    ),
    Case(
        "key-header-and-property",
        "JmsBridgeRoute",
        _set("spec.key", {"header": "JMSType", "property": "p"}),
        "spec.key",
        "set exactly one of `header` or `property`",
    ),
    Case(
        "kafka-to-jms-without-destination",
        "JmsBridgeRoute",
        _set("spec.direction", "kafkaToJms"),
        "spec",
        "direction kafkaToJms needs `jmsDestination`",
    ),
    Case(
        "kafka-to-jms-with-key",
        "JmsBridgeRoute",
        _both(
            _set("spec.direction", "kafkaToJms"),
            _set("spec.jmsDestination", {"queue": "q"}),
            _set("spec.key", {"header": "JMSType"}),
        ),
        "spec",
        "`key` applies to direction jmsToKafka only",
    ),
    Case(
        "jms-to-kafka-with-destination",
        "JmsBridgeRoute",
        _set("spec.jmsDestination", {"queue": "q"}),
        "spec",
        "`jmsDestination` applies to direction kafkaToJms or natsToJms only",
    ),
    Case(
        "jms-to-kafka-with-starting-offsets",
        "JmsBridgeRoute",
        _set("spec.startingOffsets", "earliest"),
        "spec",
        "`startingOffsets` applies to direction kafkaToJms only",
    ),
    Case(
        "jms-to-kafka-with-a-topic-pattern",
        "JmsBridgeRoute",
        _set("spec.kafkaTopic", "orders.*"),
        "spec",
        "wildcards (`*`, `>`) apply to direction kafkaToJms only",
    ),
    Case(
        "jms-to-kafka-with-reply",
        "JmsBridgeRoute",
        _set("spec.reply", {"topics": ["answers"]}),
        "spec",
        "`reply` applies to direction kafkaToJms only",
    ),
    Case(
        "jms-to-kafka-with-send",
        "JmsBridgeRoute",
        _set("spec.send", {"priority": 4}),
        "spec",
        "`send` applies to direction kafkaToJms or natsToJms only",
    ),
    Case(
        "jms-to-kafka-with-timeout",
        "JmsBridgeRoute",
        _set("spec.timeoutSeconds", 5),
        "spec",
        "`timeoutSeconds` applies to direction natsToJms only",
    ),
    Case(
        "nats-to-jms-without-subject",
        "JmsBridgeRoute",
        _nats_route(lambda spec: spec.pop("natsSubject")),
        "spec",
        "direction natsToJms needs `natsSubject`",
    ),
    Case(
        "nats-to-jms-with-topic",
        "JmsBridgeRoute",
        _nats_route(lambda spec: spec.update(kafkaTopic="t")),
        "spec",
        "`kafkaTopic` applies to direction jmsToKafka or kafkaToJms only",
    ),
    Case(
        "jms-to-nats-with-wildcard",
        "JmsBridgeRoute",
        _nats_route(
            lambda spec: spec.update(direction="jmsToNats", natsSubject="out.>") or spec.pop("jmsDestination")
        ),
        "spec",
        "natsSubject: wildcards (`*`, `>`) apply to direction natsToJms only",
    ),
    Case(
        "nats-route-in-a-registered-format",
        "JmsBridgeRoute",
        _nats_route(lambda spec: spec.update(format="avro")),
        "spec",
        "format avro and jsonSchema apply to directions jmsToKafka and kafkaToJms only",
    ),
    Case(
        "registry-client-certificate-without-key",
        "JmsBridge",
        _set("spec.kafka.schemaRegistry", {"url": "https://registry:8081", "tls": {"certFile": "/c"}}),
        "spec.kafka.schemaRegistry.tls",
        "set `certFile` and `keyFile` together",
    ),
    Case(
        "nats-to-jms-with-match",
        "JmsBridgeRoute",
        _nats_route(lambda spec: spec.update(match={"address": "a"})),
        "spec",
        "`match` applies to directions jmsToKafka, kafkaToJms and jmsToNats",
    ),
    Case(
        "nats-tls-certificate-without-key",
        "JmsBridge",
        _set("spec.nats", {"servers": ["tls://h:4222"], "tls": {"caFile": "/ca", "certFile": "/c"}}),
        "spec.nats.tls",
        "set `certFile` and `keyFile` together",
    ),
    Case(
        "jms-key-store-without-its-password",
        "JmsBridge",
        _set("spec.jms.tls", {"keyStoreFile": "/etc/jms-tls/client.p12"}),
        "spec.jms.tls",
        "set `keyStoreFile` and `keyStorePasswordSecretRef` together (a client certificate), or neither",
    ),
    Case(
        "jms-trust-store-password-without-the-store",
        "JmsBridge",
        _set("spec.jms.tls", {"trustStorePasswordSecretRef": {"name": "jms-tls", "key": "password"}}),
        "spec.jms.tls",
        "`trustStorePasswordSecretRef` needs `trustStoreFile`",
    ),
    Case(
        "nats-password-and-token",
        "JmsBridge",
        _set(
            "spec.nats",
            {
                "servers": ["nats://host:4222"],
                "credentialsSecretRef": {"name": "nats"},
                "tokenSecretRef": {"name": "nats", "key": "token"},
            },
        ),
        "spec.nats",
        "set one of `credentialsSecretRef`, `tokenSecretRef` and `credsSecretRef`, not more",
    ),
    Case(
        "nats-token-and-creds",
        "JmsBridge",
        _set(
            "spec.nats",
            {
                "servers": ["nats://host:4222"],
                "tokenSecretRef": {"name": "nats", "key": "token"},
                "credsSecretRef": {"name": "nats", "key": "bridge.creds"},
            },
        ),
        "spec.nats",
        "set one of `credentialsSecretRef`, `tokenSecretRef` and `credsSecretRef`, not more",
    ),
    Case(
        "reply-timeout-without-message-ids",
        "JmsBridgeRoute",
        _both(
            _set("spec.direction", "kafkaToJms"),
            _set("spec.jmsDestination", {"queue": "q"}),
            _set("spec.reply", {"topics": ["answers"], "timeoutSeconds": 30}),
        ),
        "spec.reply",
        "`timeoutSeconds` applies to `correlation: messageId` only",
    ),
    Case(
        "destination-queue-and-topic",
        "JmsBridgeRoute",
        _both(
            _set("spec.direction", "kafkaToJms"), _set("spec.jmsDestination", {"queue": "q", "topic": "t"})
        ),
        "spec.jmsDestination",
        "set exactly one of `queue`, `topic` or `fromHeader`",
    ),
    Case(
        "from-header-without-allowed",
        "JmsBridgeRoute",
        _both(
            _set("spec.direction", "kafkaToJms"),
            _set("spec.jmsDestination", {"fromHeader": "jms.JMSReplyTo"}),
        ),
        "spec.jmsDestination",
        "`fromHeader` needs `allowed`",
    ),
    Case(
        "allowed-without-from-header",
        "JmsBridgeRoute",
        _both(
            _set("spec.direction", "kafkaToJms"),
            _set("spec.jmsDestination", {"queue": "q", "allowed": "queue://q"}),
        ),
        "spec.jmsDestination",
        "`allowed` applies to `fromHeader` only",
    ),
]

# Cross-field rules the models keep that no CEL rule states, and why; the operator reports them as
# Stalled/InvalidSpec (tests/operator/test_operator.py).
OPERATOR_ONLY = {
    "JmsSpec": "sources listed twice: comparing every pair of an unbounded list is over CEL's cost budget",
    "JobConfig": "rules across resources (route order, dead-letter topic): the API server sees one at a time",
}


def _valid(kind: str) -> dict[str, Any]:
    return simple_bridge() if kind == "JmsBridge" else route("r")


def _sides(kind: str) -> tuple[type[pydantic.BaseModel], Any]:
    return (JmsBridge, BRIDGE_CRD) if kind == "JmsBridge" else (JmsBridgeRoute, ROUTE_CRD)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_model_and_the_crd_reject_the_same_resource_at_the_same_field(
    server: KubeApi, case: Case
) -> None:
    model, crd = _sides(case.kind)
    body = _valid(case.kind)
    case.change(body)

    by_model = model_rejections(model, body)
    assert [(path, m) for path, m in by_model if path == case.at and case.says in m], by_model

    assert schema_errors(crd, body) == []  # the structural schema alone lets it through...
    by_server = server_rejections(server, body)
    # ...CEL does not: at the same object, or the field in it that the rule's fieldPath names.
    named = [(f, m) for f, m in by_server if (f == case.at or f.startswith(f"{case.at}.")) and case.says in m]
    assert named, by_server


@pytest.mark.parametrize("kind", ["JmsBridge", "JmsBridgeRoute"])
def test_valid_resources_pass_both(server: KubeApi, kind: str) -> None:
    model, crd = _sides(kind)
    bodies = [_valid(kind)]
    if kind == "JmsBridge":
        bodies += load_yaml(EXAMPLES.parent / "provider-jars-and-tls" / "bridge.yaml")
        customised = simple_bridge()
        customised["spec"]["jms"]["clientLibraries"] = [{"image": "registry.example/mq-jars:1"}]
        customised["spec"]["spark"] = {
            "sparkConf": {"spark.executor.extraJavaOptions": "-Dx=1"},
            "pod": {
                "env": [{"name": "TZ", "value": "UTC"}],
                "volumes": [TLS],
                "volumeMounts": [{"name": "tls", "mountPath": "/etc/kafka-tls"}],
            },
        }
        customised["spec"]["jms"]["sources"].append(
            {"topic": "prices", "durableSubscription": "bridge-prices"}
        )
        bodies.append(customised)
    else:
        bodies.append(
            route(
                "back",
                direction="kafkaToJms",
                jmsDestination={"fromHeader": "jms.JMSReplyTo", "allowed": "queue://ID:.*"},
            )
        )
    bodies += [d for d in load_yaml(EXAMPLES.parent / "nats" / "bridge.yaml") if d["kind"] == kind]
    for body in bodies:
        assert model_rejections(model, body) == []
        assert schema_errors(crd, body) == []
        assert server_rejections(server, body) == []


def test_every_cross_field_rule_of_the_models_has_a_cel_twin_or_a_reason() -> None:
    """A model validator added without a CEL rule (or a documented reason) fails here."""
    with_validators = {
        name
        for name, cls in inspect.getmembers(config_models, inspect.isclass)
        if issubclass(cls, pydantic.BaseModel)
        and cls.__module__.startswith(config_models.__name__ + ".")
        and cls.__pydantic_decorators__.model_validators
    }
    with_rules = {
        name
        for name in with_validators
        if VALIDATIONS in getattr(config_models, name).model_json_schema(by_alias=True)
    }
    assert with_validators - with_rules <= set(OPERATOR_ONLY), with_validators - with_rules
    assert with_rules, "no CEL rules at all"


# What the models reject and no CEL rule can say: across list items (over CEL's cost budget for an
# unbounded list) or inside an object that keeps unknown fields (CEL sees only its declared fields). The
# operator reports these as Stalled/InvalidSpec.
MODEL_ONLY = [
    Case(
        "source-twice",
        "JmsBridge",
        _set("spec.jms.sources", [{"queue": "a"}, {"queue": "a"}]),
        "spec.jms",
        "sources list a more than once",
    ),
    Case(
        "volume-without-source",
        "JmsBridge",
        _set("spec.spark.pod", {"volumes": [{"name": "tls"}]}),
        "spec.spark.pod.volumes.0",
        "exactly one volume source",
    ),
    Case(
        "volume-with-two-sources",
        "JmsBridge",
        _set("spec.spark.pod", {"volumes": [{**TLS, "emptyDir": {}}]}),
        "spec.spark.pod.volumes.0",
        "exactly one volume source",
    ),
    Case(  # a Spark setting by the back door: SparkConf reads `spark.*` system properties
        "java-options-set-a-spark-setting",
        "JmsBridge",
        _set(
            "spec.spark.sparkConf", {"spark.driver.extraJavaOptions": "-Dspark.kubernetes.namespace=payments"}
        ),
        "spec.spark",
        "cannot set Spark settings (-Dspark.<name>=...)",
    ),
]


@pytest.mark.parametrize("case", MODEL_ONLY, ids=[c.id for c in MODEL_ONLY])
def test_what_cel_cannot_say_is_still_rejected_by_the_model(server: KubeApi, case: Case) -> None:
    model, _ = _sides(case.kind)
    body = _valid(case.kind)
    case.change(body)
    assert server_rejections(server, body) == []
    assert [(p, m) for p, m in model_rejections(model, body) if p == case.at and case.says in m]


# ---------------------------------------------------------------------------------------------------
# Credentials in the spec: refused by CEL where CEL can see them, as the operator refuses them
# (CredentialsInSpec), unless spec.security.allowInlineCredentials; sasl.password whatever it says.

JNDI = {"initialContextFactory": "x.Factory", "providerUrl": "ldap://jndi:389"}


@dataclasses.dataclass(frozen=True)
class CredentialCase:
    id: str
    change: Change
    field: str  # the operator's field (validation.Fault.field)
    says: str  # part of the CEL rule's message
    waivable: bool = True


CREDENTIAL_CASES = [
    CredentialCase(
        "factory-url-with-user-info",
        _set("spec.jms.connectionFactory.properties", {"brokerURL": "failover:(tcp://u:p@amq:61616)"}),
        "spec.jms.connectionFactory.properties.brokerURL",
        "a credential in spec.jms.connectionFactory.properties",
    ),
    CredentialCase(
        "factory-password-key",
        _set("spec.jms.connectionFactory.properties", {"brokerURL": "tcp://a:1", "trustStorePassword": "x"}),
        "spec.jms.connectionFactory.properties.trustStorePassword",
        "a credential in spec.jms.connectionFactory.properties",
    ),
    CredentialCase(
        "kafka-password-key",
        _set("spec.kafka.properties", {"ssl.key.password": "x"}),
        "spec.kafka.properties.ssl.key.password",
        "a credential in spec.kafka.properties",
    ),
    CredentialCase(
        "kafka-jaas-config",
        _set("spec.kafka.properties", {"sasl.jaas.config": "x required;"}),
        "spec.kafka.properties.sasl.jaas.config",
        "a credential in spec.kafka.properties",
    ),
    CredentialCase(
        "kafka-url-with-user-info",
        _set("spec.kafka.properties", {"sasl.oauthbearer.token.endpoint.url": "https://u:p@idp/token"}),
        "spec.kafka.properties.sasl.oauthbearer.token.endpoint.url",
        "a credential in spec.kafka.properties",
    ),
    CredentialCase(
        "bootstrap-servers-with-user-info",
        _set("spec.kafka.bootstrapServers", "SASL_SSL://u:p@broker:9093"),
        "spec.kafka.bootstrapServers",
        "user:password@ in spec.kafka.bootstrapServers",
    ),
    CredentialCase(
        "jndi-environment-credentials",
        _both(
            _set("spec.jms.connectionFactory", DROP),
            _set("spec.jms.jndi", {**JNDI, "environment": {"java.naming.security.credentials": "x"}}),
        ),
        "spec.jms.jndi.environment.java.naming.security.credentials",
        "a credential in spec.jms.jndi",
    ),
    CredentialCase(
        "jndi-provider-url-with-user-info",
        _both(
            _set("spec.jms.connectionFactory", DROP),
            _set("spec.jms.jndi", {**JNDI, "providerUrl": "ldap://u:p@jndi:389"}),
        ),
        "spec.jms.jndi.providerUrl",
        "a credential in spec.jms.jndi",
    ),
    CredentialCase(
        "kafka-sasl-password",
        _set("spec.kafka.properties", {"sasl.password": "x"}),
        "spec.kafka.properties.sasl.password",
        "sasl.password in spec.kafka.properties is never used",
        waivable=False,
    ),
]


def _refused_by_the_operator(body: Mapping[str, Any]) -> list[str]:
    from bridge_job.config.validation import CREDENTIALS_IN_SPEC, bridge_faults, refusals

    spec = JmsBridge.model_validate(body).spec
    return [f.field for f in refusals(bridge_faults(spec)) if f.reason == CREDENTIALS_IN_SPEC]


@pytest.mark.parametrize("case", CREDENTIAL_CASES, ids=[c.id for c in CREDENTIAL_CASES])
def test_credentials_in_the_spec_are_refused_at_admission_as_by_the_operator(
    server: KubeApi, case: CredentialCase
) -> None:
    body = simple_bridge()
    case.change(body)
    assert case.field in _refused_by_the_operator(body)
    assert schema_errors(BRIDGE_CRD, body) == []  # the structural schema takes it: CEL refuses it
    rejected = [field for field, message in server_rejections(server, body) if case.says in message]
    assert rejected == [".".join(case.field.split(".")[:2])]  # the rule on spec names the section

    body["spec"]["security"] = {"allowInlineCredentials": True}
    assert (case.field in _refused_by_the_operator(body)) == (not case.waivable)
    assert bool([m for _, m in server_rejections(server, body) if case.says in m]) == (not case.waivable)


@pytest.mark.parametrize("value", [True, 0.5])
def test_a_factory_property_is_an_integer_or_a_string(value: Any) -> None:
    """The one union of scalars CEL sees (`x-kubernetes-int-or-string`): a boolean or a decimal is text."""
    body = simple_bridge()
    body["spec"]["jms"]["connectionFactory"]["properties"]["useAsyncSend"] = value
    where = "spec.jms.connectionFactory.properties.useAsyncSend"
    assert [e for e in schema_errors(BRIDGE_CRD, body) if e.startswith(where)], "the API server takes it"
    with pytest.raises(pydantic.ValidationError, match=r"an integer or a string: write .* as \"(true|0\.5)"):
        JmsBridge.model_validate(body)
    body["spec"]["jms"]["connectionFactory"]["properties"]["useAsyncSend"] = str(value).lower()
    assert schema_errors(BRIDGE_CRD, body) == []
    JmsBridge.model_validate(body)


# ---------------------------------------------------------------------------------------------------
# Transition rules: what an update may not change (the API server checks them against the stored object)


# Both rules name the field: its own (self == oldSelf) and the spec's (set in both or in neither).
ON_THE_FIELD = ON_THE_SPEC = "spec.bridgeId"
BRIDGE_ID_UPDATES = [
    ("kept", "orders", "orders", []),
    ("never-set", None, None, []),
    ("changed", "orders", "orders-2", [ON_THE_FIELD]),
    ("set-later", None, "orders", [ON_THE_SPEC]),
    ("removed", "orders", None, [ON_THE_SPEC]),
]


@pytest.mark.parametrize(
    ("before", "after", "refused"), [c[1:] for c in BRIDGE_ID_UPDATES], ids=[c[0] for c in BRIDGE_ID_UPDATES]
)
def test_the_bridge_id_is_fixed_at_creation(
    server: KubeApi, before: str | None, after: str | None, refused: list[str]
) -> None:
    def with_id(bridge_id: str | None) -> dict[str, Any]:
        body = simple_bridge()
        if bridge_id is not None:
            body["spec"]["bridgeId"] = bridge_id
        return body

    old, new = with_id(before), with_id(after)
    new["spec"]["suspend"] = True  # an update that changes something else too
    assert server_rejections(server, new) == []  # a create runs no transition rule
    rejections = server_rejections(server, new, old)
    assert [field for field, _ in rejections] == refused
    assert all("bridgeId cannot change after creation" in message for _, message in rejections)
