"""The Secret (or ConfigMap) key behind each file a bridge's Kafka settings name, found from its pod spec."""

from __future__ import annotations

from typing import Any

import pytest
from jmsbridge_operator.kafka_checks.mounted_files import (
    FileContents,
    KafkaFileUnreadable,
    MountedFile,
    mounted_files,
    pem_settings,
    registry_files,
)

from bridge_job.config import JmsBridge, KafkaSpec, PodSettings
from tests.operator.helpers import EXAMPLES, load_yaml

TLS_EXAMPLE = EXAMPLES.parent / "provider-jars-and-tls" / "bridge.yaml"


def files(properties: dict[str, str], **pod: Any) -> tuple[MountedFile, ...]:
    kafka = KafkaSpec.model_validate({"bootstrapServers": "k:9093", "properties": properties})
    return mounted_files(kafka, PodSettings.model_validate(pod) if pod else None)


def refused(properties: dict[str, str], **pod: Any) -> str:
    with pytest.raises(KafkaFileUnreadable) as raised:
        files(properties, **pod)
    return str(raised.value)


def test_the_tls_examples_files_are_in_its_secrets() -> None:
    (body,) = load_yaml(TLS_EXAMPLE)
    spec = JmsBridge.model_validate(body).spec
    assert mounted_files(spec.kafka, spec.spark.pod) == (
        MountedFile("ssl.ca.location", "/etc/kafka-ca/ca.crt", "Secret", "kafka-cluster-ca", "ca.crt"),
        MountedFile(
            "ssl.certificate.location", "/etc/kafka-tls/user.crt", "Secret", "bridge-kafka-tls", "user.crt"
        ),
        MountedFile("ssl.key.location", "/etc/kafka-tls/user.key", "Secret", "bridge-kafka-tls", "user.key"),
    )


def test_no_file_no_lookup() -> None:
    assert files({"ssl.endpoint.identification.algorithm": "none"}) == ()


def test_items_subpaths_configmaps_and_the_deepest_mount() -> None:
    pod = {
        "volumes": [
            {
                "name": "tls",
                "secret": {"secretName": "tls", "items": [{"key": "tls.key", "path": "keys/client.key"}]},
            },
            {"name": "bundle", "configMap": {"name": "trust-bundle"}},
            {"name": "store", "secret": {"secretName": "keystores"}},
        ],
        "volumeMounts": [
            {"name": "tls", "mountPath": "/etc/tls"},
            {"name": "bundle", "mountPath": "/etc/tls/ca"},  # inside the other: the deeper one holds it
            {"name": "store", "mountPath": "/opt/kafka/client.p12", "subPath": "client.p12"},
        ],
    }
    found = files(
        {
            "ssl.key.location": "/etc/tls/keys/client.key",
            "ssl.ca.location": "/etc/tls/ca/bundle.pem",
            "ssl.keystore.location": "/opt/kafka/client.p12",
        },
        **pod,
    )
    assert {(f.setting, f.source, f.name, f.key) for f in found} == {
        ("ssl.key.location", "Secret", "tls", "tls.key"),
        ("ssl.ca.location", "ConfigMap", "trust-bundle", "bundle.pem"),
        ("ssl.keystore.location", "Secret", "keystores", "client.p12"),
    }


def test_a_file_no_secret_covers_is_refused_naming_property_and_path() -> None:
    message = refused({"ssl.ca.location": "/opt/certs/ca.pem"})
    assert message.startswith("spec.kafka.properties.ssl.ca.location /opt/certs/ca.pem is in none of ")
    assert "spec.spark.pod.volumeMounts" in message
    empty_dir = {
        "volumes": [{"name": "scratch", "emptyDir": {}}],
        "volumeMounts": [{"name": "scratch", "mountPath": "/opt"}],
    }
    assert "volume scratch (emptyDir): the operator's Kafka checks read only Secret and ConfigMap" in refused(
        {"ssl.ca.location": "/opt/ca.pem"}, **empty_dir
    )
    secret = {
        "volumes": [{"name": "ca", "secret": {"secretName": "ca"}}],
        "volumeMounts": [{"name": "ca", "mountPath": "/etc/ca"}],
    }
    assert "volume ca (Secret ca) has no file sub/ca.pem" in refused(
        {"ssl.ca.location": "/etc/ca/sub/ca.pem"}, **secret
    )
    assert "is the directory of volume ca" in refused({"ssl.ca.location": "/etc/ca"}, **secret)
    itemized = {
        "volumes": [
            {"name": "ca", "secret": {"secretName": "ca", "items": [{"key": "ca.crt", "path": "ca.pem"}]}}
        ],
        "volumeMounts": [{"name": "ca", "mountPath": "/etc/ca"}],
    }
    assert "no item of volume ca (Secret ca) has path ca.crt" in refused(
        {"ssl.ca.location": "/etc/ca/ca.crt"}, **itemized
    )
    # /etc/ca is a prefix of /etc/cabinet, not a directory above it
    assert "in none of" in refused({"ssl.ca.location": "/etc/cabinet/x"}, **secret)


def test_pem_files_become_pem_settings_and_the_rest_stays_files() -> None:
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    contents = FileContents(
        {
            "ssl.ca.location": pem,
            "ssl.key.location": b"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n",
            "ssl.certificate.location": b"\x30\x82\x01\xff",  # DER: librdkafka's *.pem will not take it
            "ssl.keystore.location": b"\x30\x82",  # PKCS#12: only ever a file
        }
    )
    settings, rest = pem_settings(contents)
    assert settings == {
        "ssl.ca.pem": pem.decode(),
        "ssl.key.pem": contents.by_property["ssl.key.location"].decode(),
    }
    assert set(rest) == {"ssl.certificate.location", "ssl.keystore.location"}
    assert "PRIVATE" not in repr(contents)


def test_the_schema_registrys_tls_files_are_followed_to_their_secret_and_kept_from_librdkafka() -> None:
    kafka = KafkaSpec.model_validate(
        {
            "bootstrapServers": "k:9093",
            "schemaRegistry": {"url": "https://registry:8081", "tls": {"caFile": "/etc/registry/ca.crt"}},
        }
    )
    pod = PodSettings.model_validate(
        {
            "volumes": [{"name": "registry-ca", "secret": {"secretName": "registry-ca"}}],
            "volumeMounts": [{"name": "registry-ca", "mountPath": "/etc/registry"}],
        }
    )
    (found,) = mounted_files(kafka, pod)
    assert found == MountedFile(
        "schemaRegistry.tls.caFile", "/etc/registry/ca.crt", "Secret", "registry-ca", "ca.crt"
    )
    assert (
        found.where
        == "Secret registry-ca, key 'ca.crt' (spec.kafka.schemaRegistry.tls.caFile /etc/registry/ca.crt)"
    )
    contents = FileContents({"schemaRegistry.tls.caFile": b"-----BEGIN CERTIFICATE-----\n"})
    assert pem_settings(contents) == ({}, {})  # the registry's client takes it, not librdkafka
    assert registry_files(contents) == {"caFile": b"-----BEGIN CERTIFICATE-----\n"}
    with pytest.raises(
        KafkaFileUnreadable, match=r"spec.kafka.schemaRegistry.tls.caFile /etc/registry/ca.crt"
    ):
        mounted_files(kafka, None)
