"""The one exception the JMS adapter raises, and how a Java failure becomes its message.

Callers (the ingest loop, the Kafka -> JMS sender) must not need to know Java exists: every provider or
JVM failure is re-raised as `JmsError` whose message says what the adapter was doing, where, and the
provider's reason. The reason is the innermost cause (`getCause()` or JMS's `getLinkedException()`),
because that is the part that names the real problem ("Connection refused"), followed by its exception
class so that a terse message ("nohost") still makes sense. The Java exception stays attached as
`__cause__` for the traceback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jpype

from bridge_job.faults.stops import BridgeStopped

# Java exceptions, as JPype raises them in Python.
JavaException = jpype.JException

_MAX_CAUSE_DEPTH = 20


class JmsError(Exception):
    """A JMS provider or JVM failure; the message says what failed, where, and why."""


class JmsRefused(JmsError):
    """A connection refused for a reason no retry mends: the job stops at once instead of waiting it out."""


class JmsLoginRefused(JmsRefused):
    """The broker refused the connection's login (a JMSSecurityException while connecting): a wrong
    password or an unknown user."""


class JmsTlsRefused(JmsRefused):
    """TLS to the broker failed: a store the JVM cannot read, a broker certificate its CAs do not trust,
    a client certificate the broker refuses or none where it asks for one."""


def _next_cause(throwable: Any) -> Any:
    cause = throwable.getCause()
    if cause is None and hasattr(throwable, "getLinkedException"):
        cause = throwable.getLinkedException()
    return cause


def reason(error: BaseException) -> str:
    """The innermost cause of a Java exception as `message (ExceptionClass)`; Python errors as text.

    When the innermost cause has no message (a bare `EOFException`), the message comes from the nearest
    exception around it that has one.
    """
    if not isinstance(error, JavaException):
        return str(error) or type(error).__name__
    chain = _chain(error)
    kind = str(chain[-1].getClass().getSimpleName())
    class_names = {str(t.getClass().getName()) for t in chain}
    for throwable in reversed(chain):
        message = throwable.getMessage()
        # "java.io.EOFException" as a message says no more than the class name.
        if message is not None and str(message).strip() and str(message) not in class_names:
            return f"{message} ({kind})"
    return kind


def jms_error(what: str, error: BaseException) -> JmsError:
    """`JmsError("<what>: <reason>")`, for `raise jms_error(...) from error`."""
    return JmsError(f"{what}: {reason(error)}")


def connect_error(what: str, error: BaseException) -> JmsError:
    """`jms_error`, or `JmsLoginRefused` when a JMSSecurityException is among the causes, or
    `JmsTlsRefused` when the TLS handshake failed (`TLS_REFUSED`)."""
    chain = _chain(error)
    if any(is_one_of(throwable, NOT_AUTHORIZED) for throwable in chain):
        return JmsLoginRefused(f"{what}: {reason(error)}")
    refused = any(is_one_of(throwable, TLS_REFUSED) for throwable in chain)
    if refused and not any(is_one_of(throwable, CUT_OFF) for throwable in chain):
        return JmsTlsRefused(f"{what}: {reason(error)}")
    return jms_error(what, error)


def _chain(error: BaseException) -> list[Any]:
    """A Java exception and its causes, outermost first; empty for a Python one."""
    chain: list[Any] = []
    throwable: Any = error if isinstance(error, JavaException) else None
    while throwable is not None and len(chain) < _MAX_CAUSE_DEPTH:
        chain.append(throwable)
        throwable = _next_cause(throwable)
        if throwable is not None and any(throwable.equals(seen) for seen in chain):
            break  # a cause that names an exception around it
    return chain


def _in_both_apis(*names: str) -> tuple[str, ...]:
    return tuple(f"{package}.{name}" for package in ("javax.jms", "jakarta.jms") for name in names)


# What a provider's refusal of one message means. Any other failure is taken for the connection's: the
# senders send again on a new one (a connection lost over a plain URL may fail a send before the
# provider reports it to the exception listener).
NOT_AUTHORIZED = _in_both_apis("JMSSecurityException")
# A handshake that failed (an alert from the broker, a certificate not trusted), unless the connection was
# cut off under it (`CUT_OFF`: "Remote host terminated the handshake", a broker going away): that is an
# outage, and the handshake of the job's own (tls.py) says whether TLS is to blame.
TLS_REFUSED = ("javax.net.ssl.SSLHandshakeException", "java.security.cert.CertificateException")
CUT_OFF = ("java.io.EOFException", "java.net.SocketException")
REFUSED = (
    *_in_both_apis("InvalidDestinationException", "MessageFormatException"),
    "java.lang.IllegalArgumentException",
)


# ActiveMQ Artemis's answer to a transaction that sent a message whose duplicate id (`_AMQ_DUPL_ID`) it
# has seen: the whole transaction is rolled back (outside a transaction it drops only that message). By
# name in the chain or in its text: a client of another protocol may not have the class.
DUPLICATE_REJECTED = "ActiveMQDuplicateIdException"


def duplicate_rejected(error: JmsError) -> bool:
    """Whether `error` (a failed commit) is the provider refusing the transaction for a duplicate id."""
    cause = error.__cause__
    chain = _chain(cause) if cause is not None else []
    return any(DUPLICATE_REJECTED in f"{t.getClass().getName()} {t}" for t in chain)


def refusal_of_one_message(error: JmsError, what: str) -> str:
    """Why the provider refused to send one message (`error`'s text), for the route's soft-failure policy;
    BridgeStopped naming `what` was sent when the bridge's user may not send there; `error` itself when
    it is the connection's (the sender sends again on a new one)."""
    if caused_by(error, NOT_AUTHORIZED):
        raise BridgeStopped(f"{what}: {error}: grant the bridge's JMS user access") from None
    if not caused_by(error, REFUSED):
        raise error
    return str(error)


def caused_by(error: JmsError, class_names: Sequence[str]) -> bool:
    """Whether the Java exception behind `error` is one of `class_names` or a subclass. By name: a JVM has
    only one of the two JMS APIs on its classpath."""
    cause = error.__cause__
    return isinstance(cause, jpype.JException) and is_one_of(cause, class_names)


def is_one_of(throwable: Any, class_names: Sequence[str]) -> bool:
    java_class = throwable.getClass()
    while java_class is not None:
        if str(java_class.getName()) in class_names:
            return True
        java_class = java_class.getSuperclass()
    return False
