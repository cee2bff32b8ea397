"""The JMS providers the end-to-end scenarios run on: a broker, and the client the bridge uses with it.

- `activemq`: ActiveMQ Classic 5.17 (Debian), its OpenWire client (javax.jms), no login.
- `artemis`: ActiveMQ Artemis 2.40 with a login required, Artemis' own client for javax.jms.
- `artemis-jakarta`: the same broker, Artemis' Jakarta Messaging 3 client (jakarta.jms), the same
  `JmsBridge` otherwise: the adapter reads the API off the connection factory.

The tests' own producers and consumers use ActiveMQ Classic's client on every broker (Artemis speaks
OpenWire too): a third-party client to the bridge's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jmsbridge.artemis_server import FACTORY_CLASS, ArtemisBroker, artemis_classpath
from jmsbridge.local import JmsBroker

PROVIDERS = ["activemq", "artemis", "artemis-jakarta"]
SECRET = {"name": "jms-login"}  # the bridge's credentialsSecretRef; the job reads it from its environment


@dataclass(frozen=True)
class JmsProvider:
    name: str  # one of PROVIDERS
    broker: JmsBroker

    def jms(self) -> dict[str, Any]:
        """The bridge's `spec.jms` settings for this provider (harness.bridge_document's `jms=`); none for
        ActiveMQ Classic, the harness's default."""
        if not isinstance(self.broker, ArtemisBroker):
            return {}
        return {
            "connectionFactory": {"className": FACTORY_CLASS, "properties": {"brokerURL": self.broker.url}},
            "classpath": artemis_classpath(self.api.removesuffix(".jms")),
            "credentialsSecretRef": SECRET,
        }

    @property
    def api(self) -> str:
        """The JMS API of the bridge's client."""
        return "jakarta.jms" if self.name == "artemis-jakarta" else "javax.jms"

    def job_env(self) -> dict[str, str]:
        """What the operator would put in the job's environment from the Secret."""
        credentials = self.broker.credentials()
        if credentials is None:
            return {}
        return {"JMSBRIDGE_JMS_USERNAME": credentials[0], "JMSBRIDGE_JMS_PASSWORD": credentials[1]}
