"""librdkafka settings for every Kafka client of the bridge, from its KafkaSpec and the environment.

Credentials come from environment variables the operator fills from the bridge's Secrets (never from
the config file), so that the ConfigMap, the SparkApplication and the logs never hold them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from bridge_job.config import ENV_KAFKA_PASSWORD, ENV_KAFKA_USERNAME, KafkaSpec
from bridge_job.errors import BridgeStopped

KafkaConfig = dict[str, str | int | float | bool]


def client_config(kafka: KafkaSpec, environ: Mapping[str, str] | None = None) -> KafkaConfig:
    env = os.environ if environ is None else environ
    config: KafkaConfig = {
        "bootstrap.servers": kafka.bootstrap_servers,
        "security.protocol": kafka.security_protocol.value,
        # A producer must never create a topic by writing to it: a missing topic is a hard failure.
        "allow.auto.create.topics": "false",
    }
    if kafka.sasl is not None:
        username, password = env.get(ENV_KAFKA_USERNAME), env.get(ENV_KAFKA_PASSWORD)
        if not username or password is None:
            raise BridgeStopped(
                f"Kafka SASL needs the environment variables {ENV_KAFKA_USERNAME} and {ENV_KAFKA_PASSWORD} "
                f"(from Secret {kafka.sasl.credentials_secret_ref.name})"
            )
        config |= {"sasl.mechanism": kafka.sasl.mechanism.value, "sasl.username": username}
        config["sasl.password"] = password
    config.update(kafka.properties)
    return config


def producer_config(kafka: KafkaSpec, environ: Mapping[str, str] | None = None) -> KafkaConfig:
    """An idempotent producer that fails fast on a missing topic instead of waiting for it."""
    return client_config(kafka, environ) | {
        "enable.idempotence": "true",
        "acks": "all",
        "linger.ms": "5",
        "topic.metadata.propagation.max.ms": "5000",
    }


HARD_ERRORS = frozenset(
    {
        "UNKNOWN_TOPIC_OR_PART",
        "_UNKNOWN_TOPIC",
        "TOPIC_AUTHORIZATION_FAILED",
        "CLUSTER_AUTHORIZATION_FAILED",
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        "SASL_AUTHENTICATION_FAILED",
    }
)


def is_hard(error: object) -> bool:
    """Whether a Kafka error needs a person (a missing topic, a refused permission), not a retry."""
    return str(getattr(error, "name", lambda: "")()) in HARD_ERRORS


def delivery_failure(topic: str, error: object) -> BridgeStopped:
    """A clear hard failure for a failed Kafka write: a topic that does not exist, a write not allowed."""
    name = getattr(error, "name", lambda: "")()
    if name in ("UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_TOPIC"):
        return BridgeStopped(f"topic {topic} does not exist: create it or fix the route")
    if name == "TOPIC_AUTHORIZATION_FAILED":
        return BridgeStopped(f"not authorized to write to topic {topic}: grant WRITE on it to the bridge")
    text = getattr(error, "str", lambda: str(error))()
    return BridgeStopped(f"cannot write to topic {topic}: {text}")
