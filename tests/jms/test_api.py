"""Which JMS API a connection factory implements, and errors recognised in either API.

This process's JVM holds ActiveMQ Classic's javax.jms client only (conftest.py): the Jakarta client runs
end to end, in the job, on Artemis (tests/e2e/test_ingress.py's round trip).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jpype
import pytest

from bridge_job.jms.api import JmsApi, api_of
from bridge_job.jms.errors import (
    NOT_AUTHORIZED,
    REFUSED,
    JmsError,
    JmsLoginRefused,
    JmsTlsRefused,
    caused_by,
    connect_error,
)


def test_the_api_is_read_off_the_factory_class() -> None:
    assert api_of(jpype.JClass("org.apache.activemq.ActiveMQConnectionFactory")) == JmsApi("javax.jms")
    assert api_of(jpype.JClass("org.apache.activemq.ActiveMQXAConnectionFactory")) == JmsApi("javax.jms")


def test_a_class_of_neither_api_is_named() -> None:
    with pytest.raises(JmsError, match=r"java\.util\.HashMap is neither a javax\.jms\.ConnectionFactory"):
        api_of(jpype.JClass("java.util.HashMap"))


def test_a_type_missing_from_the_classpath_is_a_clear_error() -> None:
    with pytest.raises(JmsError, match=r"jakarta\.jms\.Session is not on the JMS classpath"):
        JmsApi("jakarta.jms").type("Session")


def _raised(java_class: str) -> JmsError:
    """A JmsError as the adapter raises it, `from` a Java exception of `java_class`."""
    error = JmsError("send failed")
    error.__cause__ = jpype.JClass(java_class)("refused")
    return error


def test_errors_are_recognised_by_name_and_by_subclass() -> None:
    assert caused_by(_raised("javax.jms.JMSSecurityException"), NOT_AUTHORIZED)
    assert caused_by(_raised("javax.jms.InvalidDestinationException"), REFUSED)
    # A subclass counts: ActiveMQ's own exceptions extend the JMS ones.
    assert caused_by(_raised("java.lang.NumberFormatException"), REFUSED)  # an IllegalArgumentException
    assert not caused_by(_raised("javax.jms.JMSException"), REFUSED)
    assert not caused_by(JmsError("no Java cause"), NOT_AUTHORIZED)


def _java(java_class: str, message: str, cause: object = None) -> Any:
    throwable = jpype.JClass(java_class)(message)
    if cause is not None:
        throwable.initCause(cause)
    return throwable


# Built when the test runs: the JVM starts with the session (conftest.py), after collection.
CONNECT_ERRORS: dict[str, tuple[Callable[[], Any], type[JmsError]]] = {
    # the broker's alert, a certificate not trusted: refused, no retry mends them
    "alert": (
        lambda: _java("javax.jms.JMSException", "c", _java("javax.net.ssl.SSLHandshakeException", "alert")),
        JmsTlsRefused,
    ),
    "untrusted": (
        lambda: _java("java.io.IOException", "c", _java("java.security.cert.CertificateException", "old")),
        JmsTlsRefused,
    ),
    # a handshake cut off (a broker going away mid-handshake): an outage
    "cut-off": (
        lambda: _java(
            "javax.jms.JMSException",
            "c",
            _java(
                "javax.net.ssl.SSLHandshakeException",
                "Remote host terminated the handshake",
                _java("java.io.EOFException", "SSL peer shut down incorrectly"),
            ),
        ),
        JmsError,
    ),
    "login": (lambda: _java("javax.jms.JMSSecurityException", "password is invalid."), JmsLoginRefused),
    "down": (lambda: _java("java.net.ConnectException", "Connection refused"), JmsError),
}


@pytest.mark.parametrize("case", list(CONNECT_ERRORS))
def test_connect_errors_that_no_retry_mends_are_told_from_outages(case: str) -> None:
    build, expected = CONNECT_ERRORS[case]
    assert type(connect_error("cannot connect to ssl://b:61617", build())) is expected
