"""The NATS adapter against a real nats-server: unreachable servers are waited out within the patience and
then stop the bridge with one line; the probe says whether the servers answer, as they come and go; TLS
from mounted files (certificates made with openssl), mutual TLS included."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from bridge_job.config import NatsSpec
from bridge_job.faults.stops import BridgeStopped
from bridge_job.nats.link import NatsLink
from bridge_job.nats.probe import NatsProbe
from jmsbridge.local import free_port, wait_until
from testbed.brokers import NatsServer


def test_servers_unreachable_at_start_stop_the_bridge_after_the_patience() -> None:
    link = NatsLink(NatsSpec(servers=[f"nats://127.0.0.1:{free_port()}"]), "test", patience_seconds=2)
    with pytest.raises(BridgeStopped) as stopped:
        link.connect()
    assert "unreachable for" in stopped.value.reason
    assert "spec.outages.patienceSeconds=2" in stopped.value.reason
    assert "bring the NATS servers back or fix spec.nats.servers" in stopped.value.reason


def test_servers_that_come_within_the_patience_are_waited_for() -> None:
    server = NatsServer()
    link = NatsLink(NatsSpec(servers=[server.url]), "test", patience_seconds=60)
    starting = threading.Timer(1.5, server.start)
    starting.start()
    try:
        link.connect()  # returns once the server is there
        link.ping(5)
    finally:
        starting.join()
        link.close()
        server.cleanup()


class Listener:
    def __init__(self) -> None:
        self.states: list[str] = []

    def failing(self, what: str, error: object) -> None:
        self.states.append("failing")

    def back(self, what: str) -> None:
        self.states.append("back")


def test_the_probe_follows_the_servers() -> None:
    server = NatsServer().start()
    listener = Listener()
    probe = NatsProbe(NatsSpec(servers=[server.url]), listener, interval=0.2)
    try:
        wait_until(lambda: listener.states[-1:] == ["back"], 30, "the probe to reach NATS")
        server.stop()
        wait_until(lambda: listener.states[-1:] == ["failing"], 60, "the probe to see NATS gone")
        server.start()
        wait_until(lambda: listener.states[-1:] == ["back"], 60, "the probe to see NATS back")
    finally:
        probe.stop()
        server.cleanup()


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _signed(directory: Path, name: str, ca: Path, ca_key: Path, extensions: str | None = None) -> None:
    """`name.key` and `name.crt`, signed by the CA."""
    key, csr, crt = directory / f"{name}.key", directory / f"{name}.csr", directory / f"{name}.crt"
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(csr)
    )
    signing = ["x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial"]
    signing += ["-days", "1", "-out", str(crt)]
    if extensions is not None:
        (directory / f"{name}.ext").write_text(extensions)
        signing += ["-extfile", str(directory / f"{name}.ext")]
    _openssl(*signing)


@pytest.fixture()
def certificates(tmp_path: Path) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate it signed."""
    ca, ca_key = tmp_path / "ca.crt", tmp_path / "ca.key"
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-ca",
        "-keyout", str(ca_key), "-out", str(ca),
    )  # fmt: skip
    _signed(tmp_path, "server", ca, ca_key, "subjectAltName=IP:127.0.0.1\n")
    _signed(tmp_path, "client", ca, ca_key)
    return tmp_path


def test_mutual_tls_with_the_mounted_files(certificates: Path) -> None:
    c = certificates
    tls_args = ["--tlsverify", "--tlscert", str(c / "server.crt"), "--tlskey", str(c / "server.key")]
    server = NatsServer(args=[*tls_args, "--tlscacert", str(c / "ca.crt")]).start()
    url = f"tls://127.0.0.1:{server.port}"
    client = {
        "caFile": str(c / "ca.crt"),
        "certFile": str(c / "client.crt"),
        "keyFile": str(c / "client.key"),
    }
    try:
        link = NatsLink(NatsSpec.model_validate({"servers": [url], "tls": client}), "test", 10)
        link.connect()
        link.ping(5)
        link.close()
        without = NatsLink(
            NatsSpec.model_validate({"servers": [url], "tls": {"caFile": str(c / "ca.crt")}}), "t", 2
        )
        with pytest.raises(BridgeStopped, match="unreachable for"):  # the server wants a client certificate
            without.connect()
    finally:
        server.cleanup()


def test_tls_files_that_are_not_there_stop_the_bridge_at_once(tmp_path: Path) -> None:
    spec = NatsSpec.model_validate(
        {"servers": ["tls://127.0.0.1:1"], "tls": {"caFile": str(tmp_path / "ca.crt")}}
    )
    with pytest.raises(BridgeStopped, match=r"spec\.nats\.tls: .*mount the Secret"):
        NatsLink(spec, "test", 300)
