"""spec.kafka.schemaRegistry and the formats that need it (issue 47): what is refused, and where."""

from __future__ import annotations

import pydantic
import pytest

from bridge_job.config import Format, SubjectNameStrategy, field_errors
from bridge_job.formats.subjects import subject
from bridge_job.kafka.registry import client_settings, uses_registry
from testbed.builders import bridge, config, route

REGISTRY = {"url": "http://registry.example:8080/apis/ccompat/v7"}


def with_registry(**registry: object) -> dict[str, object]:
    return {"bootstrapServers": "127.0.0.1:9092", "schemaRegistry": REGISTRY | registry}


@pytest.mark.parametrize("fmt", ["avro", "jsonSchema"])
def test_a_route_in_a_registered_format_needs_the_bridges_registry(fmt: str) -> None:
    with pytest.raises(
        ValueError, match=f"route 'out' has format {fmt} but the bridge sets no kafka.schemaRegistry"
    ):
        config(route("out", "orders", format=fmt))
    taken = config(route("out", "orders", format=fmt), kafka=with_registry())
    assert taken.routes[0].spec.format is Format(fmt) and uses_registry(taken)
    assert not uses_registry(config(route("out", "orders")))


@pytest.mark.parametrize("url", ["http://user:secret@registry:8080", "ftp://registry", "registry:8080", ""])
def test_a_registry_url_with_credentials_or_another_scheme_is_refused(url: str) -> None:
    with pytest.raises(pydantic.ValidationError) as refused:
        bridge(kafka=with_registry(url=url))
    assert [at for at, _ in field_errors(refused.value)] == ["spec.kafka.schemaRegistry.url"]


def test_subjects_follow_the_strategy() -> None:
    assert subject(SubjectNameStrategy.TOPIC_NAME, "orders", "value") == "orders-value"
    assert subject(SubjectNameStrategy.TOPIC_NAME, "orders", "key") == "orders-key"
    assert subject(SubjectNameStrategy.RECORD_NAME, "orders", "value") == "io.confluent.connect.jms.Value"
    assert (
        subject(SubjectNameStrategy.TOPIC_RECORD_NAME, "orders", "key")
        == "orders-io.confluent.connect.jms.Key"
    )


def test_the_clients_settings_take_the_credentials_from_the_environment_and_the_tls_files() -> None:
    spec = bridge(
        kafka=with_registry(
            credentialsSecretRef={"name": "registry-user"},
            tls={
                "caFile": "/etc/registry/ca.crt",
                "certFile": "/etc/registry/tls.crt",
                "keyFile": "/etc/registry/tls.key",
            },
        )
    ).spec.kafka.schema_registry
    assert spec is not None
    settings = client_settings(
        spec, {"JMSBRIDGE_REGISTRY_USERNAME": "bridge", "JMSBRIDGE_REGISTRY_PASSWORD": "pw"}
    )
    assert settings["basic.auth.user.info"] == "bridge:pw"
    assert settings["ssl.ca.location"] == "/etc/registry/ca.crt"
    assert (settings["ssl.certificate.location"], settings["ssl.key.location"]) == (
        "/etc/registry/tls.crt",
        "/etc/registry/tls.key",
    )
    assert settings["max.retries"] == 0  # the bridge's patience decides, not the client's retries
    with pytest.raises(
        Exception,
        match="JMSBRIDGE_REGISTRY_USERNAME and JMSBRIDGE_REGISTRY_PASSWORD \\(from Secret registry-user\\)",
    ):
        client_settings(spec, {})


def test_the_schemas_registered_are_the_values_and_the_keys_of_routes_keyed_by_the_key_record() -> None:
    from bridge_job.formats.subjects import registrations

    taken = config(
        route("a", "orders", format="avro"),
        route("b", "prices", format="jsonSchema", key={"property": "sku"}, order=1),
        route("c", "plain", order=2),
        kafka=with_registry(),
    )
    assert [(name, kind) for name, _, kind in registrations(taken)] == [
        ("orders-value", "AVRO"),
        ("orders-key", "AVRO"),
        ("prices-value", "JSON"),
    ]
