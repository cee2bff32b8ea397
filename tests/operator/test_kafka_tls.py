"""Kafka TLS material mounted from Secrets: the job's Kafka clients load the files `kafka.properties` name,
and the operator's checks read the same material from the Secrets behind them.

The example bridge (`examples/provider-jars-and-tls/bridge.yaml`) mounts a CA and a client certificate and
key from Secrets and points `ssl.*.location` at them. Here the same files (made with openssl) sit under a
directory standing for the pod's `/`, and the job's own client settings (`bridge_job.kafka.clients`) build
a real librdkafka producer from them: librdkafka reads and checks every file when a client is created, so a
wrong path or a file that is not PEM fails here. The operator, whose pod has none of these files, gets the
same bytes from the Secrets (`kafka_checks.mounted_files`, `material`) and hands them to its client as PEM
settings. The handshake itself, against Apache Kafka's TLS listeners: tests/operator/kafka_checks/
test_acls.py and tests/kafka/test_startup.py.
"""

from __future__ import annotations

import base64
import stat
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient
from jmsbridge_operator.kafka_checks.material import read_kafka_files
from jmsbridge_operator.kafka_checks.mounted_files import FileContents, KafkaFileUnreadable
from jmsbridge_operator.kafka_checks.probe import probe_configs

from bridge_job.config import JmsBridge, KafkaSpec
from bridge_job.kafka.clients import client_settings
from bridge_job.kube.api import ApiError
from testbed.apiserver.client import KubeApi
from testbed.brokers import free_port
from testbed.resources import NAMESPACE, simple_bridge
from tests.operator.fixtures import KAFKA_CHECKS_ENV, chart_operator
from tests.operator.helpers import EXAMPLES, load_yaml, route
from tests.operator.test_operator import View

pytestmark = pytest.mark.timeout(120)

EXAMPLE = EXAMPLES.parent / "provider-jars-and-tls" / "bridge.yaml"


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture()
def pod_root(tmp_path: Path) -> Path:
    """A CA, and a client certificate and key it signed, where the example's Secrets are mounted."""
    root = tmp_path / "pod"
    ca_dir, tls_dir = root / "etc/kafka-ca", root / "etc/kafka-tls"
    ca_dir.mkdir(parents=True)
    tls_dir.mkdir(parents=True)
    ca_key = tmp_path / "ca.key"
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=test-ca",
        "-keyout",
        str(ca_key),
        "-out",
        str(ca_dir / "ca.crt"),
    )
    csr = tmp_path / "user.csr"
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=bridge",
        "-keyout",
        str(tls_dir / "user.key"),
        "-out",
        str(csr),
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(ca_dir / "ca.crt"),
        "-CAkey",
        str(ca_key),
        "-CAcreateserial",
        "-days",
        "1",
        "-out",
        str(tls_dir / "user.crt"),
    )
    return root


def _settings(root: Path) -> dict[str, str | int | float | bool]:
    (body,) = load_yaml(EXAMPLE)
    kafka = JmsBridge.model_validate(body).spec.kafka
    settings = client_settings(kafka, None)
    for key, value in list(settings.items()):
        if key.endswith(".location"):
            settings[key] = str(root) + str(value)  # the mount paths, under the stand-in for `/`
    return settings


def test_the_jobs_kafka_client_loads_the_mounted_ca_certificate_and_key(pod_root: Path) -> None:
    settings = _settings(pod_root)
    assert settings["security.protocol"] == "SSL"
    assert {k for k in settings if k.endswith(".location")} == {
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.key.location",
    }
    Producer(settings).flush(0)  # raises when a file is missing or unreadable


def test_a_missing_or_wrong_file_fails_when_the_client_is_made(pod_root: Path, tmp_path: Path) -> None:
    ca = pod_root / "etc/kafka-ca/ca.crt"
    ca.rename(tmp_path / "ca.crt")
    with pytest.raises(KafkaException, match=r"ssl\.ca\.location"):
        Producer(_settings(pod_root))
    (tmp_path / "ca.crt").rename(ca)
    _openssl("genrsa", "-out", str(pod_root / "etc/kafka-tls/user.key"), "2048")  # not the certificate's key
    with pytest.raises(KafkaException):
        Producer(_settings(pod_root))


# ---------------------------------------------------------------------------------------------------
# The operator's checks: the same material, from the Secrets


def _example() -> JmsBridge:
    (body,) = load_yaml(EXAMPLE)
    return JmsBridge.model_validate(body)


def _secrets(root: Path) -> list[dict[str, Any]]:
    """The example's two Secrets, holding the files under `root` (as `kubectl create secret` makes them)."""

    def secret(name: str, files: dict[str, Path]) -> dict[str, Any]:
        data = {key: base64.b64encode(path.read_bytes()).decode() for key, path in files.items()}
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "annotations": {"jmsbridge.dev/bridges": "*"},
            },
            "data": data,
        }

    tls = root / "etc/kafka-tls"
    return [
        secret("kafka-cluster-ca", {"ca.crt": root / "etc/kafka-ca/ca.crt"}),
        secret("bridge-kafka-tls", {"user.crt": tls / "user.crt", "user.key": tls / "user.key"}),
    ]


class _Kube:
    """Answers `get` from the given objects (by name), or with an API error."""

    def __init__(self, objects: list[dict[str, Any]], status: int | None = None) -> None:
        self.objects = {o["metadata"]["name"]: o for o in objects}
        self.status = status

    def get(self, resource: Any, namespace: str | None, name: str) -> dict[str, Any] | None:
        if self.status is not None:
            raise ApiError(self.status, "Forbidden", "no")
        return self.objects.get(name)


def test_the_checks_read_the_files_from_the_secrets_and_pass_them_as_pem(
    pod_root: Path, tmp_path: Path
) -> None:
    spec = _example().spec
    kube: Any = _Kube(_secrets(pod_root))
    contents = read_kafka_files(kube, NAMESPACE, spec)
    assert contents.by_property["ssl.key.location"] == (pod_root / "etc/kafka-tls/user.key").read_bytes()
    local = spec.kafka.model_copy(update={"bootstrap_servers": f"127.0.0.1:{free_port()}"})  # no DNS
    directory = tmp_path / "probe"
    directory.mkdir()
    admin, producer = probe_configs(local, None, contents, directory)
    for settings in (admin, producer):
        assert not [key for key in settings if key.endswith(".location")]  # no path of the bridge's pods
        assert settings["ssl.ca.pem"] == (pod_root / "etc/kafka-ca/ca.crt").read_text()
        assert {"ssl.certificate.pem", "ssl.key.pem"} <= set(settings)
    AdminClient(admin)  # librdkafka parses the certificates and checks the key against its certificate
    Producer(producer).flush(0)
    assert list(directory.iterdir()) == []  # PEM text: nothing written

    # A keystore is only ever a file: written owner-only into the probe's directory.
    keystore = KafkaSpec.model_validate(
        {"bootstrapServers": "k:9093", "properties": {"ssl.keystore.location": "/x.p12"}}
    )
    admin, _ = probe_configs(keystore, None, FileContents({"ssl.keystore.location": b"\x30\x82"}), directory)
    written = Path(admin["ssl.keystore.location"])
    assert written.parent == directory and written.read_bytes() == b"\x30\x82"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600


def test_what_the_checks_cannot_read_is_named() -> None:
    spec = _example().spec
    missing: Any = _Kube([])
    with pytest.raises(KafkaFileUnreadable) as raised:
        read_kafka_files(missing, NAMESPACE, spec)
    assert str(raised.value) == (
        "Secret kafka-cluster-ca not found in namespace apps, for Secret kafka-cluster-ca, key 'ca.crt' "
        "(spec.kafka.properties.ssl.ca.location /etc/kafka-ca/ca.crt)"
    )
    forbidden: Any = _Kube([], status=403)
    with pytest.raises(KafkaFileUnreadable, match="needs `get` on secrets in namespace apps"):
        read_kafka_files(forbidden, NAMESPACE, spec)
    no_key: Any = _Kube([{"metadata": {"name": "kafka-cluster-ca"}, "data": {"tls.crt": "eA=="}}])
    with pytest.raises(KafkaFileUnreadable, match=r"key 'ca.crt' .*: the Secret has no such key"):
        read_kafka_files(no_key, NAMESPACE, spec)
    broken: Any = _Kube([], status=500)
    with pytest.raises(ApiError):  # the API server's trouble: retried, not a verdict
        read_kafka_files(broken, NAMESPACE, spec)


@pytest.fixture()
def view(cluster: KubeApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[View]:
    """The operator with its Kafka checks on, every second."""
    monkeypatch.setenv(KAFKA_CHECKS_ENV, "true")
    monkeypatch.setenv("JMSBRIDGE_KAFKA_CHECK_INTERVAL", "1")
    with chart_operator(cluster):
        yield View(cluster)


def test_the_operator_checks_a_tls_bridge_with_the_material_of_its_secrets(
    pod_root: Path, view: View
) -> None:
    """The example's Kafka settings and pod volumes, against an address where nothing listens: without
    its Secrets the check names what it cannot read; with them, librdkafka takes the material and the
    check gets as far as the network (unreachable), which a file missing in the operator's pod never did."""
    example = _example()
    name = f"tls-{uuid.uuid4().hex[:8]}"
    body = simple_bridge(name)
    body["spec"]["kafka"] = {
        **example.spec.kafka.model_dump(by_alias=True, exclude_none=True, mode="json"),
        "bootstrapServers": f"127.0.0.1:{free_port()}",
    }
    pod = example.spec.spark.pod
    assert pod is not None
    body["spec"]["spark"] = {
        "pod": pod.model_dump(
            by_alias=True, exclude_none=True, mode="json", include={"volumes", "volume_mounts"}
        )
    }
    view.create(body, route(f"{name}-out", name, topic=f"{name}-out"))

    def conditions() -> dict[str, tuple[str, str]]:
        return View.conditions(view.bridge(name))

    view.wait(
        lambda: conditions().get("KafkaReady") == ("False", "CredentialsNotFound"), "CredentialsNotFound"
    )
    message = view.message(view.bridge(name), "KafkaReady")
    assert "Secret kafka-cluster-ca not found in namespace apps" in message
    assert "spec.kafka.properties.ssl.ca.location /etc/kafka-ca/ca.crt" in message
    assert not [app for app in view.apps() if app.startswith(name)]  # nothing starts unchecked

    view.create(*_secrets(pod_root))
    view.wait(lambda: conditions().get("KafkaReady") == ("Unknown", "KafkaUnreachable"), "KafkaUnreachable")
    assert "did not answer" in view.message(view.bridge(name), "KafkaReady")
