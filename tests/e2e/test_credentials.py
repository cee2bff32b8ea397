"""The JMS password from the Secret never shows in the job's output, even when the broker refuses it.

A real ActiveMQ with authentication (its simpleAuthenticationPlugin), real Apache Kafka, the job as a process
with the credentials in the environment variables the operator fills from the Secret.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jmsbridge.local import ACTIVEMQ_HOME, BridgeJob
from tests.brokers import ActiveMqBroker, KafkaBroker, port_open, wait_until
from tests.support.harness import bridge_document, write_yaml

USER, PASSWORD = "app", "right-password"
WRONG = "wrong-hunter2-do-not-print"

SECURED = """\
<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans
         http://www.springframework.org/schema/beans/spring-beans.xsd
         http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="secured{port}" persistent="false"
          useJmx="false">
    <plugins>
      <simpleAuthenticationPlugin>
        <users><authenticationUser username="{user}" password="{password}" groups="users"/></users>
      </simpleAuthenticationPlugin>
    </plugins>
    <transportConnectors>
      <transportConnector name="openwire" uri="tcp://127.0.0.1:{port}"/>
    </transportConnectors>
  </broker>
</beans>
"""


class SecuredActiveMq(ActiveMqBroker):
    """ActiveMQ that lets in only USER with PASSWORD (an XML configuration: a broker URI cannot say it)."""

    def start(self) -> SecuredActiveMq:
        base = self.workdir
        (base / "conf").mkdir(exist_ok=True)
        (base / "data").mkdir(exist_ok=True)
        config = base / "conf" / "activemq.xml"
        config.write_text(SECURED.format(port=self.port, user=USER, password=PASSWORD))
        self._spawn(
            [
                "java", "-Xmx256m", "-Djava.awt.headless=true",
                f"-Dactivemq.home={ACTIVEMQ_HOME}", f"-Dactivemq.base={base}",
                f"-Dactivemq.conf={base / 'conf'}", f"-Dactivemq.data={base / 'data'}",
                "-jar", str(ACTIVEMQ_HOME / "bin" / "activemq.jar"), "start", f"xbean:file:{config}",
            ]
        )  # fmt: skip
        wait_until(
            lambda: self._check_alive() and port_open(self.port), 90, f"secured ActiveMQ on {self.url}"
        )
        return self


@pytest.fixture
def secured_activemq() -> Iterator[SecuredActiveMq]:
    broker = SecuredActiveMq(persistent=False).start()
    yield broker
    broker.cleanup()


@pytest.mark.e2e
def test_a_wrong_jms_password_stops_the_job_and_never_shows(
    tmp_path: Path, kafka: KafkaBroker, secured_activemq: SecuredActiveMq
) -> None:
    jms = {"credentialsSecretRef": {"name": "amq"}}
    document = bridge_document("secured", secured_activemq, kafka, [{"queue": "secured.in"}], jms=jms)
    document["spec"]["outages"] = {"patienceSeconds": 5}
    env = {"JMSBRIDGE_JMS_USERNAME": USER, "JMSBRIDGE_JMS_PASSWORD": WRONG}
    job = BridgeJob([write_yaml(tmp_path / "bridge.yaml", document)], tmp_path, env=env).start()

    assert job.wait_exit(timeout=240) == 2
    log = job.log()
    stopped = [line for line in log.splitlines() if "jmsbridge stopped:" in line]
    assert len(stopped) == 1, log[-4000:]
    assert "password is invalid" in stopped[0]  # the broker's refusal is named...
    assert WRONG not in log  # ...and the password is not, anywhere in the job's output
