"""TLS to the JMS brokers: certificates made for the run, and a bridge's `spec.jms` over TLS.

- `broker`: the brokers' certificate (loopback names), signed by the CA `jms-ca`; their TLS transports
  ask every client for a certificate that CA signed.
- `bridge`: the bridge's client certificate from `jms-ca`, and a trust store of `jms-ca`.
- `stranger`: a client certificate from another CA, `other-ca`, and a trust store of that CA only (so it
  trusts no broker here either).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jmsbridge.artemis_server import FACTORY_CLASS, ArtemisBroker, artemis_classpath
from jmsbridge.certificates import LOOPBACK_NAMES, JavaTls
from jmsbridge.local import ActiveMqBroker, activemq_classpath

TRUST_PASSWORD_ENV = "JMSBRIDGE_JMS_TRUST_STORE_PASSWORD"
KEY_PASSWORD_ENV = "JMSBRIDGE_JMS_KEY_STORE_PASSWORD"
TRUST_SECRET = {"name": "jms-trust", "key": "password"}
KEY_SECRET = {"name": "jms-client-cert", "key": "store-password"}


@dataclass(frozen=True)
class TlsMaterial:
    broker: JavaTls
    bridge: JavaTls
    stranger: JavaTls


def tls_material(directory: Path) -> TlsMaterial:
    return TlsMaterial(
        broker=JavaTls.make(directory, "broker", "jms-ca", LOOPBACK_NAMES),
        bridge=JavaTls.make(directory, "bridge", "jms-ca"),
        stranger=JavaTls.make(directory, "stranger", "other-ca"),
    )


def tls_jms(broker: ActiveMqBroker | ArtemisBroker, trust: JavaTls, key: JavaTls | None) -> dict[str, Any]:
    """A bridge's `spec.jms` (without sources) to `broker`'s TLS transport, trusting what `trust` trusts
    and presenting `key`'s certificate (none when None)."""
    tls: dict[str, Any] = {
        "trustStoreFile": str(trust.trust_store),
        "trustStorePasswordSecretRef": TRUST_SECRET,
    }
    if key is not None:
        tls |= {"keyStoreFile": str(key.key_store), "keyStorePasswordSecretRef": KEY_SECRET}
    if isinstance(broker, ArtemisBroker):
        # Artemis' client notices a client certificate refused under TLS 1.3 only when its call times out
        # (30 s by default): 5 s here.
        url = f"{broker.tls_url}&callTimeout=5000"
        return {
            "connectionFactory": {"className": FACTORY_CLASS, "properties": {"brokerURL": url}},
            "classpath": artemis_classpath("javax"),
            "credentialsSecretRef": {"name": "jms-login"},
            "tls": tls,
        }
    return {
        "connectionFactory": {
            "className": "org.apache.activemq.ActiveMQConnectionFactory",
            "properties": {"brokerURL": broker.tls_url},
        },
        "classpath": activemq_classpath(),
        "tls": tls,
    }


def tls_env(
    broker: ActiveMqBroker | ArtemisBroker,
    trust: JavaTls,
    key: JavaTls | None,
    key_password: str | None = None,
) -> dict[str, str]:
    """What the operator would put in the job's environment from the Secrets `tls_jms` names."""
    env = {TRUST_PASSWORD_ENV: trust.password}
    if key is not None:
        env[KEY_PASSWORD_ENV] = key.password if key_password is None else key_password
    if (login := broker.credentials()) is not None:
        env |= {"JMSBRIDGE_JMS_USERNAME": login[0], "JMSBRIDGE_JMS_PASSWORD": login[1]}
    return env
