"""`JmsConnection`: one started JMS Connection (javax.jms or jakarta.jms, as its factory is: api.py), from
which consumers and producers are made.

Opening a connection starts the JVM if needed (with the classpath given, else `jms.classpath`), builds
the provider's connection factory (class and bean properties, or JNDI; see factories.py) and connects,
with the credentials when given; they are passed to `createConnection(user, password)` and never logged
or put in a message. TLS stores, when given, are the JVM's (tls.py).

A provider reports a lost connection asynchronously, to the connection's ExceptionListener. The adapter
records it, and the next call on any consumer or producer of the connection raises a `JmsError` saying
that the connection to WHERE failed and why, instead of a less telling error from a closed session.

A provider runs non-daemon threads (ActiveMQ: transport and session threads) until its connection is
closed, and JPype's exit handler waits for them when it destroys the JVM: a process that left a
connection open on some error path would never exit. Every connection still open at interpreter exit is
therefore closed first (an atexit hook registered after JPype's, so it runs before it); uncommitted
batches roll back, as after a crash. Not destroying the JVM instead is no way out: the process then
aborts at exit now and then ("FATAL: exception not rethrown").

Threads: as in JMS, the connection may be shared, but each consumer and producer (one session each)
must be used by one thread at a time.

Reconnection is the provider's business (ActiveMQ's `failover:` transport, for instance). Such transports
retry forever by default, even for the first connection; bound them with the provider's own URL options
(see docs/jms.md) so that an unreachable broker fails instead of hanging.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import secrets
import threading
from collections.abc import Sequence
from typing import Any

import jpype

from bridge_job.config import JmsSource, JmsSpec
from bridge_job.jms.api import JmsApi, api_of
from bridge_job.jms.consuming import BatchConsumer
from bridge_job.jms.errors import (
    JavaException,
    JmsError,
    JmsRefused,
    JmsTlsRefused,
    connect_error,
    jms_error,
    reason,
)
from bridge_job.jms.factories import connection_factory, describe_location
from bridge_job.jms.jvm import jvm_started, start_jvm
from bridge_job.jms.producing import JmsProducer
from bridge_job.jms.tls import Store, check_stores, handshake_refusal, jvm_options, tls_endpoints

log = logging.getLogger(__name__)

# Connections not yet closed, strongly held: one dropped without close() must still be closed at exit.
_open: set[JmsConnection] = set()


def process_client_id(bridge_id: str, role: str) -> str:
    """A JMS client id of this process's own, for a connection that holds no durable subscription: the
    pid says which process it is, and a random part keeps it unique across pods (a container's pids
    repeat from pod to pod, and a provider refuses a second connection with a client id in use)."""
    return f"jmsbridge-{bridge_id}-{role}-{os.getpid()}-{secrets.token_hex(3)}"


def _close_open_connections() -> None:
    for connection in list(_open):
        with contextlib.suppress(JmsError):
            connection.close()


atexit.register(_close_open_connections)


def _diagnosed(spec: JmsSpec, failure: JmsError) -> JmsError:
    """`failure`, or `JmsTlsRefused` when a TLS endpoint of the factory's URL refuses the handshake (the
    provider's own error may not say so: tls.py)."""
    if isinstance(failure, JmsRefused) or spec.connection_factory is None:
        return failure
    for host, port in tls_endpoints(describe_location(spec)):
        if (why := handshake_refusal(host, port)) is not None:
            return JmsTlsRefused(f"{failure}; a TLS handshake with {host}:{port} was refused: {why}")
    return failure


class JmsConnection:
    """A started JMS connection; a context manager that closes it."""

    def __init__(
        self,
        spec: JmsSpec,
        credentials: tuple[str, str] | None = None,
        classpath: Sequence[str] = (),
        client_id: str | None = None,
        stores: Sequence[Store] = (),
    ) -> None:
        wanted_classpath = list(classpath) or spec.classpath
        if wanted_classpath or stores or not jvm_started():
            start_jvm(wanted_classpath, jvm_options(stores))
        check_stores(stores)
        self.where = describe_location(spec)
        self.client_id = client_id or spec.client_id
        self._failure: str | None = None
        self._failure_lock = threading.Lock()
        self._closed = False
        self._temporary_sessions: list[Any] = []
        factory = connection_factory(spec)
        self.api: JmsApi = api_of(jpype.JClass(factory.getClass()))
        try:
            if credentials is None:
                self._connection = factory.createConnection()
            else:
                self._connection = factory.createConnection(credentials[0], credentials[1])
        except JavaException as error:
            raise _diagnosed(spec, connect_error(f"cannot connect to {self.where}", error)) from error
        try:
            if self.client_id is not None:
                self._connection.setClientID(self.client_id)
            # Keep a reference: the proxy must live as long as the connection may call it.
            self._listener = jpype.JProxy(
                self.api.type("ExceptionListener"), dict={"onException": self._on_failure}
            )
            self._connection.setExceptionListener(self._listener)
            self._connection.start()
        except JavaException as error:
            with contextlib.suppress(JavaException):
                self._connection.close()
            raise _diagnosed(spec, connect_error(f"cannot connect to {self.where}", error)) from error
        _open.add(self)
        who = f" as {self.client_id}" if self.client_id else ""
        log.info("connected to %s%s (%s)", self.where, who, self.api.package)

    def _on_failure(self, error: Any) -> None:
        text = reason(error)
        with self._failure_lock:
            if self._failure is None:
                self._failure = text
        log.error("the connection to %s failed: %s", self.where, text)

    def check(self) -> None:
        """Raise `JmsError` if the provider has reported the connection lost, or it is closed."""
        if self._closed:
            raise JmsError(f"the connection to {self.where} is closed")
        if self._failure is not None:
            raise JmsError(f"the connection to {self.where} failed: {self._failure}")

    def consumer(self, source: JmsSource) -> BatchConsumer:
        """A consumer of `source` in its own transacted session."""
        self.check()
        return BatchConsumer(self._connection, self.api, source, self.client_id, self.check)

    def producer(self, transacted: bool = False) -> JmsProducer:
        """A producer in its own session."""
        self.check()
        return JmsProducer(self._connection, self.api, transacted, self.check)

    def temporary_queue(self) -> str:
        """The name of a new TemporaryQueue of this connection, which goes with the connection: where the
        answers to this process's requests come. A consumer made by `consumer(JmsSource(queue=name))` on
        this same connection reads it (providers resolve a temporary queue's name to it: ActiveMQ does)."""
        self.check()
        try:
            session = self._connection.createSession(False, self.api.type("Session").AUTO_ACKNOWLEDGE)
            name = str(session.createTemporaryQueue().getQueueName())
        except JavaException as error:
            self.check()
            raise jms_error(f"cannot create a temporary queue on {self.where}", error) from error
        self._temporary_sessions.append(session)  # closing it would not delete the queue; keep it anyway
        return name

    def close(self) -> None:
        """Close the connection and every session made from it (uncommitted batches roll back)."""
        if self._closed:
            return
        self._closed = True
        _open.discard(self)
        try:
            self._connection.close()
        except JavaException as error:
            if self._failure is None:
                raise jms_error(f"cannot close the connection to {self.where}", error) from error
            # Lost already (reported by the exception listener): nothing left to close.
            log.debug("closing the failed connection to %s: %s", self.where, reason(error))

    def __enter__(self) -> JmsConnection:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
