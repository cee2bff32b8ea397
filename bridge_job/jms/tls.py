"""TLS for the JMS client: the stores of the JVM's default SSL context (`javax.net.ssl.*`).

Every provider's TLS transport uses that context when its factory names no store of its own (ActiveMQ
Classic's `ssl://`, Artemis' `sslEnabled=true`, IBM MQ's cipher suites), so one setting serves them all,
and no password goes into a factory property. The JVM is the JMS client's alone (Kafka and NATS have
clients of their own), so its defaults are the bridge's to set.

The JVM reads the stores lazily, at the first handshake, and says little when it cannot ("Error
constructing implementation"): `check_stores` opens them as soon as the JVM runs, so that a missing file
or a wrong password is said as such, naming the file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import jpype

from bridge_job.jms.errors import JavaException, JmsTlsRefused, is_one_of, reason

StoreKind = Literal["trust", "key"]


@dataclass(frozen=True)
class Store:
    """A trust store (the CAs that signed the broker's certificate) or a key store (the client's
    certificate and key), PKCS12 or JKS."""

    kind: StoreKind
    path: str
    password: str | None = field(default=None, repr=False)


_PROPERTY = {"trust": "javax.net.ssl.trustStore", "key": "javax.net.ssl.keyStore"}


def jvm_options(stores: Sequence[Store]) -> list[str]:
    """The JVM options that make `stores` the default SSL context's."""
    options: list[str] = []
    for store in stores:
        options.append(f"-D{_PROPERTY[store.kind]}={store.path}")
        if store.password is not None:
            options.append(f"-D{_PROPERTY[store.kind]}Password={store.password}")
    return options


_checked: set[Store] = set()


def check_stores(stores: Sequence[Store]) -> None:
    """Open each store as the JVM will (the JVM must be running): `JmsTlsRefused` naming the file when
    it is missing, unreadable or its password is wrong. Each store once per process."""
    for store in stores:
        if store in _checked:
            continue
        if not os.path.isfile(store.path):
            raise JmsTlsRefused(f"the TLS {store.kind} store {store.path} does not exist")
        password = jpype.JArray(jpype.JChar)(store.password) if store.password is not None else None
        try:
            key_store = jpype.JClass("java.security.KeyStore").getInstance(
                jpype.JClass("java.io.File")(store.path), password
            )
            if store.kind == "key":  # the key's password too, as the handshake will need it
                factories = jpype.JClass("javax.net.ssl.KeyManagerFactory")
                factories.getInstance(factories.getDefaultAlgorithm()).init(key_store, password)
        except JavaException as error:
            what = f"cannot read the TLS {store.kind} store {store.path}"
            raise JmsTlsRefused(f"{what}: {reason(error)}") from error
        _checked.add(store)


# Where a provider's URL speaks TLS: ActiveMQ Classic's ssl:// (and nio+ssl://), AMQP's amqps://, or every
# endpoint of a URL that says sslEnabled=true (Artemis).
_TLS_SCHEMES = ("ssl", "nio+ssl", "tls", "amqps")
_ENDPOINT = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<host>\[[^\]]+\]|[^:/?,()\s]+):(?P<port>\d+)"
)
_SSL_ENABLED = re.compile(r"sslEnabled=true", re.IGNORECASE)


def tls_endpoints(url: str) -> list[tuple[str, int]]:
    """The host:port pairs of a provider's URL that speak TLS."""
    every_one = _SSL_ENABLED.search(url) is not None
    return [
        (match["host"].strip("[]"), int(match["port"]))
        for match in _ENDPOINT.finditer(url)
        if every_one or match["scheme"].lower() in _TLS_SCHEMES
    ]


HANDSHAKE_TIMEOUT_MS = 5000


def handshake_refusal(host: str, port: int) -> str | None:
    """Why a TLS handshake with `host:port` over the JVM's default context is refused, by either side;
    None when it succeeds or the endpoint does not answer (an outage, for the caller's patience).

    A provider says little when TLS fails (Artemis: "Cannot connect to server(s)"; ActiveMQ under TLS 1.3,
    whose server checks the client's certificate after the handshake: "Broken pipe"), so a failed connect
    asks the endpoint itself. Under TLS 1.3 a refused client certificate comes as the server's alert
    right after the handshake: it is read for, and a server that sends nothing has accepted it."""
    ssl_socket = jpype.JClass("javax.net.ssl.SSLSocketFactory").getDefault().createSocket()
    try:
        ssl_socket.connect(jpype.JClass("java.net.InetSocketAddress")(host, port), HANDSHAKE_TIMEOUT_MS)
        ssl_socket.setSoTimeout(HANDSHAKE_TIMEOUT_MS)
        ssl_socket.startHandshake()
        ssl_socket.setSoTimeout(1000)
        ssl_socket.getInputStream().read()
    except JavaException as error:
        if is_one_of(error, ("javax.net.ssl.SSLException",)):
            return reason(error)
    finally:
        ssl_socket.close()
    return None
