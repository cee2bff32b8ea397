"""Kafka TLS material mounted from Secrets: the job's Kafka clients load the files `kafka.properties` name.

The example bridge (`examples/provider-jars-and-tls/bridge.yaml`) mounts a CA and a client certificate and
key from Secrets and points `ssl.*.location` at them. Here the same files (made with openssl) sit under a
directory standing for the pod's `/`, and the job's own client settings (`bridge_job.kafka.clients`) build
a real librdkafka producer from them: librdkafka reads and checks every file when a client is created, so a
wrong path or a file that is not PEM fails here. No Kafka broker here speaks TLS (noida-db does not), so
the handshake itself is not exercised.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer

from bridge_job.config import JmsBridge
from bridge_job.kafka.clients import client_settings
from tests.operator.helpers import EXAMPLES, load_yaml

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
