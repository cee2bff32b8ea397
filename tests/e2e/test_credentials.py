"""A JMS login the broker refuses stops the job at once, naming the Secret, and the password never shows.

A real ActiveMQ with authentication (its simpleAuthenticationPlugin) and a real Artemis that requires a
login (through its javax and its Jakarta client), real Apache Kafka, the job as a process with the
credentials in the environment variables the operator fills from the Secret.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jmsbridge.local import ACTIVEMQ_HOME, BridgeJob
from testbed.brokers import ActiveMqBroker, KafkaBroker, port_open, wait_until
from testbed.harness import bridge_document, write_yaml
from tests.support.providers import JmsProvider

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


REFUSED = {
    # ActiveMQ Classic's simpleAuthenticationPlugin, Artemis' security manager: their own words.
    "activemq": "User name [{user}] or password is invalid.",
    "artemis": "AMQ229031: Unable to validate user from 127.0.0.1",
}


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("provider_name", "user"),
    [("activemq", USER), ("artemis", "bridge"), ("artemis-jakarta", "nobody")],  # the last: an unknown user
)
def test_a_refused_jms_login_stops_the_job_at_once_naming_the_secret_and_never_shows_the_password(
    tmp_path: Path, kafka: KafkaBroker, provider_name: str, user: str, request: pytest.FixtureRequest
) -> None:
    if provider_name == "activemq":
        provider = JmsProvider(provider_name, request.getfixturevalue("secured_activemq"))
    else:
        provider = JmsProvider(provider_name, request.getfixturevalue("artemis"))
    jms = provider.jms() | {"credentialsSecretRef": {"name": "amq", "passwordKey": "secret"}}
    document = bridge_document("secured", provider.broker, kafka, [{"queue": "secured.in"}], jms=jms)
    document["spec"]["outages"] = {"patienceSeconds": 600}  # a refusal is no outage: no waiting it out
    env = {"JMSBRIDGE_JMS_USERNAME": user, "JMSBRIDGE_JMS_PASSWORD": WRONG}
    job = BridgeJob([write_yaml(tmp_path / "bridge.yaml", document)], tmp_path, env=env).start()

    assert job.wait_exit(timeout=240) == 2
    log = job.log()
    stopped = [line for line in log.splitlines() if "jmsbridge stopped:" in line]
    assert len(stopped) == 1, log[-4000:]
    said = stopped[0].split("jmsbridge stopped: ", 1)[1]
    assert said.startswith(
        "the JMS broker refused the bridge's login (JMSBRIDGE_JMS_USERNAME and JMSBRIDGE_JMS_PASSWORD, "
        "from Secret amq, keys username and secret): a wrong password or an unknown user; fix the Secret "
        "or the user on the broker: cannot connect to "
    ), said
    assert provider.broker.url in said
    broker_kind = "activemq" if provider_name == "activemq" else "artemis"
    assert REFUSED[broker_kind].format(user=user) in stopped[0]  # the broker's refusal is named...
    assert "unreachable" not in log  # ...taken for no outage...
    assert WRONG not in log  # ...and the password is not, anywhere in the job's output
