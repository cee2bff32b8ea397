"""Kafka refusing the bridge's credentials or its TLS: a hard failure at once, never an outage to wait out.

librdkafka reports a refused SASL login (a wrong password, an unknown user) and a failed TLS handshake (a
broker certificate that does not verify against the CA, a client certificate the broker refuses) only as
error events, while the call that was waiting times out as it would with the broker down. `refusal`
tells those events apart from an outage; `what_to_fix` words one for a person, naming the Secret and keys
or the file the bridge read. The job (`kafka.waiting`) and the operator's checks
(`jmsbridge_operator.kafka_checks`) both use them, so both say the same.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError

from bridge_job.config import ENV_KAFKA_PASSWORD, ENV_KAFKA_USERNAME, KafkaSpec


class RefusalKind(enum.StrEnum):
    AUTHENTICATION = "KafkaAuthenticationFailed"
    TLS = "KafkaTlsFailed"


class TlsProblem(enum.StrEnum):
    BROKER_CERTIFICATE = "broker certificate"  # it does not verify against our CA
    CLIENT_CERTIFICATE = "client certificate"  # the broker refused ours
    HANDSHAKE = "handshake"  # anything else (a plaintext listener, no common protocol)


@dataclass(frozen=True)
class Refusal:
    kind: RefusalKind
    detail: str  # librdkafka's words
    tls: TlsProblem | None = None


# What librdkafka says when the broker's TLS alert refuses the client's certificate (a _TRANSPORT error:
# the handshake itself completed on the client's side).
_CERTIFICATE_ALERTS = (
    "alert bad certificate",
    "alert certificate required",
    "alert unknown ca",
    "alert certificate unknown",
    "alert certificate expired",
    "alert certificate revoked",
)


def refusal(error: Any) -> Refusal | None:
    """The refusal a librdkafka error event reports; None for anything else (an outage, a timeout)."""
    if not isinstance(error, KafkaError):
        return None
    code, text = error.code(), error.str()
    if code in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
        return Refusal(RefusalKind.AUTHENTICATION, text)
    if code in (KafkaError._SSL, KafkaError._TRANSPORT) and any(
        alert in text for alert in _CERTIFICATE_ALERTS
    ):
        return Refusal(RefusalKind.TLS, text, TlsProblem.CLIENT_CERTIFICATE)
    if code == KafkaError._SSL:
        verify = "certificate verify failed" in text
        return Refusal(
            RefusalKind.TLS, text, TlsProblem.BROKER_CERTIFICATE if verify else TlsProblem.HANDSHAKE
        )
    return None


_seen: list[Refusal] = []  # the last refusal a client of this process reported


def note(error: Any) -> None:
    """Keep a refusal that a client's error event reports (`clients.LOGGING`'s error_cb)."""
    found = refusal(error)
    if found is not None:
        _seen[:] = [found]


def seen() -> Refusal | None:
    """The last refusal a client of this process reported, if any."""
    return _seen[0] if _seen else None


def what_to_fix(found: Refusal, kafka: KafkaSpec, operator: bool = False) -> str:
    """One sentence: who refused what, what the bridge read it from, and librdkafka's words."""
    at = f"Kafka at {kafka.bootstrap_servers}"
    if found.kind is RefusalKind.AUTHENTICATION:
        sasl = kafka.sasl
        if sasl is None:  # the broker asked for SASL on a listener the spec says is plain TLS or plaintext
            return (
                f"{at} refused the connection's authentication (spec.kafka.sasl is not set): {found.detail}"
            )
        ref = sasl.credentials_secret_ref
        source = f"Secret {ref.name}, keys {ref.username_key} and {ref.password_key}"
        if not operator:
            source = f"{ENV_KAFKA_USERNAME} and {ENV_KAFKA_PASSWORD}, from {source}"
        return (
            f"{at} refused the bridge's SASL {sasl.mechanism.value} login ({source}): a wrong password or "
            f"an unknown user; fix the Secret or the user on the cluster: {found.detail}"
        )
    properties = kafka.properties
    if found.tls is TlsProblem.HANDSHAKE:
        return (
            f"{at}: the TLS handshake failed (securityProtocol {kafka.security_protocol.value}: is that what "
            f"the listener at that port speaks?): {found.detail}"
        )
    if found.tls is TlsProblem.CLIENT_CERTIFICATE:
        certificate = properties.get("ssl.certificate.location") or properties.get("ssl.keystore.location")
        named = f"the client certificate {certificate}" if certificate else "no client certificate"
        return (
            f"{at} refused the TLS handshake with {named} (spec.kafka.properties ssl.certificate.location): "
            f"is it signed by a CA the broker trusts, and current? {found.detail}"
        )
    ca = properties.get("ssl.ca.location")
    named = f"the CA in {ca}" if ca else "the system's CA certificates (no ssl.ca.location)"
    return (
        f"{at}: the broker's TLS certificate does not verify against {named}: set ssl.ca.location in "
        f"spec.kafka.properties to the CA that signed it: {found.detail}"
    )
