"""ActiveMQ Artemis on loopback for the tests: a broker instance that requires a login, made with the
distribution's own `artemis create` from what `scripts/install-artemis.sh` fetched with Maven.

One acceptor, on a free port, speaks every protocol the broker knows (CORE, OpenWire, AMQP, STOMP, MQTT):
the bridge connects with Artemis' own JMS client (javax or Jakarta, `artemis_classpath`), the tests'
side with ActiveMQ Classic's OpenWire client (`jmsbridge.local.jms_connection`), a third party to the
bridge's client as a JMS application in another language or protocol would be. The protocol-specific
acceptors are left out: they listen on fixed ports, which two brokers side by side would share.

`start()` again after `stop()` or `kill()` runs the same instance on the same port, with the messages it
had (its journal is on disk).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from jmsbridge.cache import cache_dir
from jmsbridge.certificates import JavaTls
from jmsbridge.local import _Process, free_port, port_open, wait_until

ARTEMIS_DIR = cache_dir("artemis", "ARTEMIS_DIR") / "current"  # as scripts/install-artemis.sh puts it
INSTALL_HINT = "run scripts/setup.sh (or scripts/install-artemis.sh) to fetch ActiveMQ Artemis with Maven"
FACTORY_CLASS = "org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory"  # in both clients


def artemis_home() -> Path:
    home = ARTEMIS_DIR / "home"
    if not (home / "bin" / "artemis").is_file():
        raise RuntimeError(f"ActiveMQ Artemis is not installed in {home}: {INSTALL_HINT}")
    return home


def artemis_classpath(api: str = "javax") -> list[str]:
    """The jars a bridge names in jms.classpath for Artemis' client of `api` ("javax" or "jakarta")."""
    return [str(ARTEMIS_DIR / "clients" / api / "*.jar")]


class ArtemisBroker(_Process):
    """ActiveMQ Artemis with persistence on and a login required (`user`, `password`)."""

    name = "artemis"
    user = "bridge"
    password = "bridge-secret"

    def __init__(self, port: int | None = None, tls: JavaTls | None = None) -> None:
        super().__init__()
        self.port = port or free_port()
        self.instance = self.workdir / "instance"
        # A TLS acceptor too, asking clients for a certificate its trust store's CA signed
        self.tls = tls
        self.tls_port = free_port() if tls else None

    @property
    def tls_url(self) -> str:
        """The TLS acceptor, as Artemis' client names it (its stores: the JVM's, spec.jms.tls)."""
        return f"tcp://127.0.0.1:{self.tls_port}?sslEnabled=true"

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def credentials(self) -> tuple[str, str] | None:
        return self.user, self.password

    def start(self) -> ArtemisBroker:
        if not self.instance.is_dir():
            self._create()
        self._spawn([str(self.instance / "bin" / "artemis"), "run"], append=True)
        wait_until(lambda: self._check_alive() and port_open(self.port), 90, f"Artemis on {self.url}")
        return self

    def _create(self) -> None:
        argv = [
            str(artemis_home() / "bin" / "artemis"), "create", str(self.instance), "--silent",
            "--user", self.user, "--password", self.password, "--require-login",
            "--host", "127.0.0.1", "--default-port", str(self.port), "--name", f"test{self.port}",
            "--no-web", "--no-amqp-acceptor", "--no-hornetq-acceptor", "--no-mqtt-acceptor",
            "--no-stomp-acceptor", "--java-memory", "512M",
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"artemis create failed:\n{(done.stdout + done.stderr)[-3000:]}")
        if self.tls is not None:
            self._add_tls_acceptor(self.tls)

    def _add_tls_acceptor(self, tls: JavaTls) -> None:
        broker_xml = self.instance / "etc" / "broker.xml"
        stores = (
            f"keyStorePath={tls.key_store};keyStorePassword={tls.password};"
            f"trustStorePath={tls.trust_store};trustStorePassword={tls.password}"
        )
        acceptor = (
            f'<acceptor name="tls">tcp://127.0.0.1:{self.tls_port}?sslEnabled=true;needClientAuth=true;'
            f"{stores}</acceptor>\n</acceptors>"
        )
        text = broker_xml.read_text(encoding="utf-8")
        assert text.count("</acceptors>") == 1, "artemis create wrote no single <acceptors> element"
        broker_xml.write_text(text.replace("</acceptors>", acceptor), encoding="utf-8")
