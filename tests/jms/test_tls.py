"""TLS to real JMS brokers through the job's own connection code (tls_probe.py, a process per case: the
stores are the JVM's): ActiveMQ Classic's ssl:// connector and Artemis' TLS acceptor, each asking for a
client certificate. What no retry mends stops at once with JmsTlsFailed and a line naming the store
and its Secret; a TLS port that does not answer is an outage, waited out as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jmsbridge.artemis_server import ArtemisBroker
from jmsbridge.certificates import JavaTls
from jmsbridge.local import ActiveMqBroker, free_port
from testbed.brokers import KafkaBroker
from testbed.harness import bridge_document, write_yaml
from tests.support.jms_tls import TlsMaterial, tls_env, tls_jms

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("jms-tls")]  # one worker starts the TLS brokers

PROBE = Path(__file__).with_name("tls_probe.py")
Broker = ActiveMqBroker | ArtemisBroker


def probe(
    tmp_path: Path, kafka: KafkaBroker, broker: Broker, jms: dict[str, Any], env: dict[str, str]
) -> dict[str, Any]:
    document = bridge_document("tls", broker, kafka, [{"queue": "tls.in"}], jms=jms)
    path = write_yaml(tmp_path / "bridge.yaml", document)
    done = subprocess.run(
        [sys.executable, str(PROBE), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ | env,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(params=["activemq", "artemis"])
def broker(request: pytest.FixtureRequest) -> Broker:
    return request.getfixturevalue(f"tls_{request.param}")  # type: ignore[no-any-return]


def test_the_bridge_connects_with_its_client_certificate(
    tmp_path: Path, kafka: KafkaBroker, broker: Broker, jms_tls: TlsMaterial
) -> None:
    bridge = jms_tls.bridge
    result = probe(tmp_path, kafka, broker, tls_jms(broker, bridge, bridge), tls_env(broker, bridge, bridge))
    assert result == {"connected": True}


def stopped(result: dict[str, Any]) -> str:
    assert result.get("reason") == "JmsTlsFailed", result
    return str(result["stopped"])


def test_a_broker_certificate_of_a_ca_the_trust_store_lacks_stops_at_once(
    tmp_path: Path, kafka: KafkaBroker, broker: Broker, jms_tls: TlsMaterial
) -> None:
    trust, key = jms_tls.stranger, jms_tls.bridge
    said = stopped(probe(tmp_path, kafka, broker, tls_jms(broker, trust, key), tls_env(broker, trust, key)))
    assert said.startswith(
        "jmsbridge hard failure [JmsTlsFailed]: TLS to the JMS broker failed "
        f"(trust store {trust.trust_store}, its password from Secret jms-trust key password; "
        f"key store {key.key_store}, its password from Secret "
        "jms-client-cert key store-password): check that the trust store holds the CA of the broker's "
        "certificate"
    ), said
    assert "unable to find valid certification path to requested target" in said, said


@pytest.mark.parametrize("client", ["none", "stranger"])
def test_a_client_certificate_the_broker_refuses_stops_at_once(
    tmp_path: Path, kafka: KafkaBroker, broker: Broker, jms_tls: TlsMaterial, client: str
) -> None:
    trust = jms_tls.bridge
    key: JavaTls | None = None if client == "none" else jms_tls.stranger
    said = stopped(probe(tmp_path, kafka, broker, tls_jms(broker, trust, key), tls_env(broker, trust, key)))
    assert said.startswith(
        "jmsbridge hard failure [JmsTlsFailed]: TLS to the JMS broker failed (trust store "
    ), said
    # The broker's alert: in the provider's own error when it reads it (ActiveMQ, now and then), else in
    # the job's handshake, as the provider's words do not say it (Artemis: a timeout; ActiveMQ: "Broken pipe")
    assert "Received fatal alert: bad_certificate (SSLHandshakeException)" in said, said
    provider_said_it = said.endswith(": Received fatal alert: bad_certificate (SSLHandshakeException)")
    assert provider_said_it or f"; a TLS handshake with 127.0.0.1:{broker.tls_port} was refused: " in said


def test_a_wrong_key_store_password_is_said_naming_the_store_and_its_secret(
    tmp_path: Path, kafka: KafkaBroker, broker: Broker, jms_tls: TlsMaterial
) -> None:
    bridge = jms_tls.bridge
    env = tls_env(broker, bridge, bridge, key_password="not-the-password")
    said = stopped(probe(tmp_path, kafka, broker, tls_jms(broker, bridge, bridge), env))
    assert f"cannot read the TLS key store {bridge.key_store}: " in said, said
    assert "key store-password" in said and "not-the-password" not in said, said


def test_a_missing_store_file_is_named(
    tmp_path: Path, kafka: KafkaBroker, broker: Broker, jms_tls: TlsMaterial
) -> None:
    bridge = jms_tls.bridge
    jms = tls_jms(broker, bridge, bridge)
    jms["tls"]["trustStoreFile"] = "/etc/jms-tls/not-mounted.p12"
    said = stopped(probe(tmp_path, kafka, broker, jms, tls_env(broker, bridge, bridge)))
    assert "the TLS trust store /etc/jms-tls/not-mounted.p12 does not exist" in said, said


def test_a_tls_port_nobody_listens_on_is_an_outage_not_a_refusal(
    tmp_path: Path, kafka: KafkaBroker, jms_tls: TlsMaterial
) -> None:
    bridge = jms_tls.bridge
    nobody = ActiveMqBroker(tls=bridge)  # never started: its TLS port is closed
    nobody.tls_port = free_port()
    result = probe(tmp_path, kafka, nobody, tls_jms(nobody, bridge, bridge), tls_env(nobody, bridge, bridge))
    nobody.cleanup()
    assert "Connection refused" in result.get("error", ""), result
