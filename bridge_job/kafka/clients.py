"""librdkafka settings for every Kafka client of a bridge: the job's and the operator's checks alike.

`client_settings` is the one builder. The user's `spec.kafka.properties` come first; on top of them the
settings the spec's own fields decide (`bootstrapServers`, `securityProtocol`, `sasl`) and the one the
bridge's promises need (`allow.auto.create.topics=false`: a missing topic is a hard failure, never created
by a write). Producers add their guarantees (idempotence, `acks=all`) on top as well, over a few defaults a
user may tune (`linger.ms`). So the operator's checks connect exactly as the job they vouch for.

Credentials are plain values. The job reads them from environment variables the operator fills from the
bridge's Secret (`client_config`, `producer_config`), so that the ConfigMap, the SparkApplication and the
logs never hold them; the operator reads the Secret itself and passes its values in.

The job's clients log through Python logging (`jmsbridge.kafka`), not straight to stderr: librdkafka
says the same thing dozens of times a second while a broker is down, so `OncePerInterval` lets one line
per cause through per `LOG_INTERVAL_SECONDS` and says how many it held back.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka.admin import AdminClient

from bridge_job.config import ENV_KAFKA_PASSWORD, ENV_KAFKA_USERNAME, KafkaSpec
from bridge_job.faults.credentials import login_from_environment
from bridge_job.faults.stops import BridgeStopped
from bridge_job.kafka import refusals

# librdkafka settings; the job's clients add their `logger` and `error_cb` objects.
KafkaConfig = dict[str, Any]

LOG_INTERVAL_SECONDS = 60.0
librdkafka_log = logging.getLogger("jmsbridge.kafka")

# What a producer of the bridge sets unless the user's properties say otherwise.
PRODUCER_DEFAULTS: KafkaConfig = {"linger.ms": "5", "topic.metadata.propagation.max.ms": "5000"}
# What every producer of the bridge needs for its delivery guarantees, whatever the properties say.
PRODUCER_GUARANTEES: KafkaConfig = {"enable.idempotence": "true", "acks": "all"}


@dataclass(frozen=True)
class KafkaCredentials:
    """SASL username and password, as read from the bridge's Secret. The password never shows in a repr."""

    username: str
    password: str = field(repr=False)


def client_settings(kafka: KafkaSpec, credentials: KafkaCredentials | None) -> KafkaConfig:
    """The settings of any client of the bridge. ValueError when SASL needs credentials and has none."""
    config: KafkaConfig = dict(kafka.properties)
    config |= {
        "bootstrap.servers": kafka.bootstrap_servers,
        "security.protocol": kafka.security_protocol.value,
        # A producer must never create a topic by writing to it: a missing topic is a hard failure.
        "allow.auto.create.topics": "false",
    }
    if kafka.sasl is not None:
        if credentials is None:
            raise ValueError(
                f"securityProtocol {kafka.security_protocol.value} needs SASL credentials "
                f"(sasl.credentialsSecretRef {kafka.sasl.credentials_secret_ref.name}) and none were given"
            )
        config |= {"sasl.mechanism": kafka.sasl.mechanism.value, "sasl.username": credentials.username}
        config["sasl.password"] = credentials.password
    return config


def producer_settings(kafka: KafkaSpec, credentials: KafkaCredentials | None) -> KafkaConfig:
    """An idempotent producer that fails fast on a missing topic instead of waiting for it."""
    return PRODUCER_DEFAULTS | client_settings(kafka, credentials) | PRODUCER_GUARANTEES


def environment_credentials(
    kafka: KafkaSpec, environ: Mapping[str, str] | None = None
) -> KafkaCredentials | None:
    """The job's SASL credentials, from the variables the operator fills from the Secret (None: no SASL)."""
    if kafka.sasl is None:
        return None
    secret = kafka.sasl.credentials_secret_ref.name
    login = login_from_environment("Kafka SASL", ENV_KAFKA_USERNAME, ENV_KAFKA_PASSWORD, secret, environ)
    return KafkaCredentials(*login)


def client_config(kafka: KafkaSpec, environ: Mapping[str, str] | None = None) -> KafkaConfig:
    """A client of the job (credentials from the environment, logs through `jmsbridge.kafka`)."""
    return client_settings(kafka, environment_credentials(kafka, environ)) | LOGGING


# For the clients that ask a group's or a transaction's coordinator (the group-offset admin client, the
# transactional producers): once every broker had been down at once, librdkafka's default re-bootstrap left
# every later request to a coordinator unanswered, until the patience ran out with Kafka back. The other
# clients keep the default: a consumer made while Kafka was unreachable found no broker for minutes without.
NO_REBOOTSTRAP: KafkaConfig = {"metadata.recovery.strategy": "none"}


def admin_client(kafka: KafkaSpec, environ: Mapping[str, str] | None = None) -> AdminClient:
    """An admin client of the job (topic metadata, topic configs, creating the journal)."""
    return AdminClient(client_config(kafka, environ))


def producer_config(kafka: KafkaSpec, environ: Mapping[str, str] | None = None) -> KafkaConfig:
    """A producer of the job (credentials from the environment, logs through `jmsbridge.kafka`)."""
    return producer_settings(kafka, environment_credentials(kafka, environ)) | LOGGING


# ---------------------------------------------------------------------------------------------------
# librdkafka's logs

_VARYING = re.compile(r"\(after \d+ms in state \w+\)|rdkafka#\w+-\d+|\d+")


class OncePerInterval(logging.Filter):
    """One record per cause per interval; the next one that passes says how many were held back.

    The cause is the message with what varies between repeats (numbers, client names, timings) removed."""

    def __init__(self, interval: float = LOG_INTERVAL_SECONDS, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.interval = interval
        self.clock = clock
        self._seen: dict[str, tuple[float, int]] = {}  # cause -> (when last let through, held back since)

    def filter(self, record: logging.LogRecord) -> bool:
        cause = _VARYING.sub("#", record.getMessage())
        now = self.clock()
        last, held = self._seen.get(cause, (None, 0))
        if last is not None and now - last < self.interval:
            self._seen[cause] = (last, held + 1)
            return False
        self._seen[cause] = (now, 0)
        if held:
            record.msg = f"{record.getMessage()} ({held} more like it in the last {self.interval:.0f} s)"
            record.args = None
        return True


librdkafka_log.addFilter(OncePerInterval())


def _log_error(error: Any) -> None:
    """librdkafka's error events (a broker down, all brokers down): a warning, rate-limited like its logs.
    Whether an error stops the bridge is decided where a client call fails, not here; a refusal of the
    bridge's credentials or TLS is kept for that decision (refusals.py)."""
    refusals.note(error)
    librdkafka_log.warning("%s", error.str() if hasattr(error, "str") else error)


LOGGING: KafkaConfig = {"logger": librdkafka_log, "error_cb": _log_error}


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


# What a topic that does not exist answers, or no longer: the client fails its records for a deleted one
# as of an unknown partition.
UNKNOWN_TOPIC = frozenset({"UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_TOPIC", "_UNKNOWN_PARTITION"})


def delivery_failure(topic: str, error: object) -> BridgeStopped:
    """A clear hard failure for a failed Kafka write: a topic that does not exist, a write not allowed."""
    name = getattr(error, "name", lambda: "")()
    if name in UNKNOWN_TOPIC:
        return BridgeStopped(f"topic {topic} does not exist: create it or fix the route")
    if name == "TOPIC_AUTHORIZATION_FAILED":
        return BridgeStopped(f"not authorized to write to topic {topic}: grant WRITE on it to the bridge")
    text = getattr(error, "str", lambda: str(error))()
    return BridgeStopped(f"cannot write to topic {topic}: {text}")
