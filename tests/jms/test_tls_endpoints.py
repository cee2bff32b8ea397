"""Which endpoints of a provider's URL speak TLS: those a failed connect asks for the handshake's words."""

from __future__ import annotations

import pytest

from bridge_job.jms.tls import Store, jvm_options, tls_endpoints


@pytest.mark.parametrize(
    ("url", "endpoints"),
    [
        ("ssl://broker:61617", [("broker", 61617)]),
        ("failover:(ssl://a:61617,tcp://b:61616)?randomize=false", [("a", 61617)]),
        ("nio+ssl://[::1]:61617", [("::1", 61617)]),
        ("tcp://artemis:61616?sslEnabled=true", [("artemis", 61616)]),
        ("(tcp://a:61616,tcp://b:61616)?sslEnabled=TRUE&ha=true", [("a", 61616), ("b", 61616)]),
        ("tcp://broker:61616", []),  # plain: a failed connect there is no TLS matter
        ("tcp://artemis:61616?sslEnabled=false", []),
        ("com.ibm.mq.jms.MQConnectionFactory (hostName=mq, port=1414)", []),
    ],
)
def test_tls_endpoints(url: str, endpoints: list[tuple[str, int]]) -> None:
    assert tls_endpoints(url) == endpoints


def test_the_stores_are_the_jvms_and_their_passwords_stay_out_of_their_repr() -> None:
    stores = [Store("trust", "/tls/ca.p12"), Store("key", "/tls/client.p12", "s3cret")]
    assert jvm_options(stores) == [
        "-Djavax.net.ssl.trustStore=/tls/ca.p12",
        "-Djavax.net.ssl.keyStore=/tls/client.p12",
        "-Djavax.net.ssl.keyStorePassword=s3cret",
    ]
    assert "s3cret" not in repr(stores)
