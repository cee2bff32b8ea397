"""`NatsLink`: this process's NATS connection, driven from plain threads.

nats-py is asyncio; the tasks and their helper threads are not. The link runs one event loop on a daemon
thread of its own and offers blocking calls (`publish`, `flush`, `subscribe`) that any thread may make.
A subscription's messages are handed to a callback on the loop's thread as `NatsMessage`s: the callback
must only queue them.

Outages are waited out as for every other system (bridge_job/faults/outages.py): nats-py reconnects by itself
and resubscribes, publishes made meanwhile wait in its buffer; the link counts how long the servers have
been gone and `check()` stops the bridge once that passes `spec.outages.patienceSeconds`. A first
connection that fails is tried again the same way (nats-py tries only once).
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

import nats
from nats.aio.client import Client, RawCredentials
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.protocol.command import hpub_cmd

from bridge_job.config import (
    ENV_NATS_CREDS,
    ENV_NATS_PASSWORD,
    ENV_NATS_TOKEN,
    ENV_NATS_USERNAME,
    NatsSpec,
    NatsTlsSpec,
)
from bridge_job.faults.credentials import login_from_environment
from bridge_job.faults.outages import PATIENCE_SETTING, Outage, patiently
from bridge_job.faults.stops import BridgeStopped
from bridge_job.nats.message import NatsMessage, NatsPublish

log = logging.getLogger("jmsbridge.nats")

T = TypeVar("T")
__all__ = ["NatsLink", "Subscription", "nats_credentials"]
CALL_SECONDS = 30.0  # one call to the loop; an outage is the link's to wait out, not the call's
RECONNECT_WAIT_SECONDS = 1
# A subscriber's backlog in this process before nats-py drops messages (a slow consumer): far more than
# the sender holds in flight, bounded so that a stuck JMS broker does not fill the memory.
PENDING_MESSAGES = 100_000
HINT = "bring the NATS servers back or fix spec.nats.servers"
FAILURES = (OSError, TimeoutError, nats.errors.Error)  # what a call meets while the servers are gone
CREDS_MARKERS = ("BEGIN NATS USER JWT", "BEGIN USER NKEY SEED")
PERMISSIONS = "permissions violation"  # the server's error for a subject the user may not use


def refused(error: BaseException) -> bool:
    """The servers' no to the bridge's credentials, which waiting does not change."""
    # Authorization Violation; User Authentication Expired or Revoked; Account Authentication Expired.
    # Not "Authentication Timeout": a slow client's, which trying again may mend.
    text = str(error).lower()
    authorization = isinstance(error, nats.errors.AuthorizationError) or "authorization violation" in text
    return authorization or "authentication expired" in text or "authentication revoked" in text


def credentials_hint(spec: NatsSpec) -> str:
    """What to check when the servers refuse the bridge."""
    if (user := spec.credentials_secret_ref) is not None:
        return f"check the user and password in Secret {user.name} (spec.nats.credentialsSecretRef)"
    if (token := spec.token_secret_ref) is not None:
        return f"check the token in Secret {token.name}, key {token.key} (spec.nats.tokenSecretRef)"
    if (creds := spec.creds_secret_ref) is not None:
        return (
            f"check the .creds file in Secret {creds.name}, key {creds.key} (spec.nats.credsSecretRef): its "
            "user must belong to an account the servers trust, and be neither expired nor revoked"
        )
    return (
        "the servers ask for credentials: name them in spec.nats (credentialsSecretRef, tokenSecretRef or "
        "credsSecretRef)"
    )


def nats_credentials(spec: NatsSpec) -> dict[str, Any]:
    """The connect options holding the bridge's NATS credentials, from the environment the operator
    fills from the Secrets (never from the spec)."""
    if spec.credentials_secret_ref is not None:
        secret = spec.credentials_secret_ref.name
        username, password = login_from_environment(
            "the NATS login", ENV_NATS_USERNAME, ENV_NATS_PASSWORD, secret
        )
        return {"user": username, "password": password}
    if spec.token_secret_ref is not None:
        token = os.environ.get(ENV_NATS_TOKEN)
        if token is None:
            raise BridgeStopped(
                f"the NATS token needs the environment variable {ENV_NATS_TOKEN} (from Secret "
                f"{spec.token_secret_ref.name}, key {spec.token_secret_ref.key})"
            )
        return {"token": token}
    if (ref := spec.creds_secret_ref) is not None:
        where = f"the environment variable {ENV_NATS_CREDS} (from Secret {ref.name}, key {ref.key})"
        creds = os.environ.get(ENV_NATS_CREDS)
        if creds is None:
            raise BridgeStopped(f"the NATS .creds file needs {where}")
        # nats-py reads the parts by their markers and would loop for ever on a text without them.
        if any(marker not in creds for marker in CREDS_MARKERS):
            raise BridgeStopped(
                f"{where} is no .creds file: it lacks `-----{'-----` or `-----'.join(CREDS_MARKERS)}-----` "
                "(put the file `nsc generate creds` writes in the Secret)"
            )
        return {"user_credentials": RawCredentials(creds)}
    return {}


def tls_context(tls: NatsTlsSpec | None) -> ssl.SSLContext | None:
    """The TLS settings of `spec.nats.tls`, read from the mounted files; BridgeStopped naming the file that
    cannot be read (a missing mount is no outage to wait out)."""
    if tls is None:
        return None
    try:
        context = ssl.create_default_context(cafile=tls.ca_file)
        if tls.cert_file is not None and tls.key_file is not None:
            context.load_cert_chain(tls.cert_file, tls.key_file)
    except (OSError, ssl.SSLError) as error:
        raise BridgeStopped(
            f"spec.nats.tls: {error}: mount the Secret holding the CA certificate (and the client "
            "certificate and key) at the paths it names (spec.spark.pod.volumes and volumeMounts)"
        ) from None
    return context


class NatsLink:
    """One connection to the NATS servers, its own event loop on a daemon thread."""

    def __init__(self, spec: NatsSpec, name: str, patience_seconds: float) -> None:
        self.spec = spec
        self.name = name
        self.where = "NATS " + ", ".join(spec.servers)
        self.outage = Outage(self.where, patience_seconds, hint=HINT)
        self._credentials = nats_credentials(spec)
        self._tls = tls_context(spec.tls)
        self._disconnected: float | None = None  # when the servers went, while they are gone
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"nats-{name}", daemon=True)
        self._thread.start()
        self._client = Client()
        self._closing = False
        self._violations: list[str] = []  # the server's permission errors, in order
        self._refused_by: Exception | None = None  # the servers' last no to the credentials

    def connect(self) -> None:
        """Connect, trying again within the patience while no server answers."""

        def transient(error: BaseException) -> bool:
            if not isinstance(error, FAILURES):
                return False
            # After its attempts nats-py says "no servers available"; why, it told `_error`.
            reason = self._refused_by or error
            if refused(reason):
                raise BridgeStopped(self._refusal(reason)) from None
            return True

        patiently(lambda timeout: self.try_connect(), self.outage, transient, doing="connecting again")
        log.info("connected to %s as %s", self.where, self.name)

    def try_connect(self) -> None:
        """One attempt (what `connect` retries): OSError, TimeoutError or a nats error when it fails."""
        self._call(self._connect())

    def ping(self, timeout: float) -> None:
        """A round trip to the server; ConnectionError, TimeoutError or a nats error when there is none."""
        if not self._client.is_connected:  # reconnecting: nats-py would answer a flush without a server
            raise ConnectionError("disconnected; nats-py is reconnecting")
        self._call(self._client.flush(timeout=int(max(timeout, 1))))

    async def _connect(self) -> None:
        await self._client.connect(
            servers=list(self.spec.servers),
            name=self.name,
            allow_reconnect=True,
            # A first connection tries each server twice, then fails (with 0, nats-py would try for ever):
            # `connect` tries again, within the patience.
            max_reconnect_attempts=1,
            reconnect_time_wait=RECONNECT_WAIT_SECONDS,
            connect_timeout=5,
            disconnected_cb=self._gone,
            reconnected_cb=self._back,
            error_cb=self._error,
            tls=self._tls,
            **self._credentials,
        )
        # Once connected, reconnect for ever (nats-py reads it when the connection goes): the link's
        # patience decides when to give up.
        self._client.options["max_reconnect_attempts"] = -1

    async def _gone(self) -> None:
        if self._closing:
            return
        with self._lock:
            if self._disconnected is None:
                self._disconnected = time.monotonic()
        log.warning("%s: disconnected; reconnecting", self.where)

    async def _back(self) -> None:
        with self._lock:
            self._disconnected = None
            self._refused_by = None
        self.outage.clear()
        log.info("%s: reconnected", self.where)

    async def _error(self, error: Exception) -> None:
        if refused(error):
            self._refused_by = error
        if PERMISSIONS in str(error).lower():  # the server goes on; what it refused is dropped
            log.warning("%s refused: %s", self.where, error)
            with self._lock:
                self._violations.append(str(error))
            return
        log.debug("%s: %s", self.where, error)  # an outage's attempts: `outage` says it, rate-limited

    def _refusal(self, error: BaseException) -> str:
        return f"{self.where} refused the bridge: {error}; {credentials_hint(self.spec)}"

    def _transient(self, error: BaseException) -> bool:
        """A failure to wait out: the servers gone, not refusing the bridge (that stops it at once)."""
        if not isinstance(error, FAILURES):
            return False
        self._check_refused()
        return True

    def _check_refused(self) -> None:
        """BridgeStopped when the servers refuse the bridge's credentials while it reconnects (a user
        removed, revoked or expired: nats-py would try again for ever), or closed the connection for good."""
        with self._lock:
            gone, refusal = self._disconnected, self._refused_by
        if gone is not None and refusal is not None:
            raise BridgeStopped(self._refusal(refusal))
        if self._client.is_closed and not self._closing:
            error = refusal or self._client.last_error
            raise BridgeStopped(
                self._refusal(error)
                if error is not None and refused(error)
                else f"{self.where} closed the bridge's connection: {error}"
            )

    def _check_permitted(self, since: int, what: str) -> None:
        """BridgeStopped if the server refused anything since violation number `since` (it says so only
        in an error message, and drops what it refused)."""
        with self._lock:
            refusals = self._violations[since:]
        if refusals:
            raise BridgeStopped(
                f"{self.where} refused the bridge {what}: {refusals[0]}; grant the bridge's NATS user that "
                "permission, or change the route's natsSubject"
            )

    def check(self) -> None:
        """BridgeStopped once the servers have been gone for longer than the patience, or refuse the
        bridge's credentials (a user removed or revoked: nats-py tries again for ever), or closed the
        connection for good."""
        self._check_refused()
        with self._lock:
            gone = self._disconnected
        elapsed = 0.0 if gone is None else time.monotonic() - gone
        if gone is not None and elapsed >= self.outage.patience:
            raise BridgeStopped(
                f"{self.where}: unreachable for {elapsed:.0f}s, the patience of {PATIENCE_SETTING}="
                f"{self.outage.patience:.0f}; {HINT} (in-flight requests time out at their requesters), "
                "or raise the patience"
            )

    def subscribe(self, subject: str, queue: str, on_message: Callable[[NatsMessage], None]) -> Subscription:
        async def deliver(msg: Msg) -> None:
            headers = dict(msg.headers) if msg.headers else {}
            on_message(NatsMessage(msg.subject, msg.data, msg.reply or None, headers, time.monotonic()))

        async def subscribe() -> Subscription:
            return await self._client.subscribe(
                subject, queue=queue, cb=deliver, pending_msgs_limit=PENDING_MESSAGES
            )

        since = len(self._violations)
        subscription = self._call(subscribe())
        self.flush()  # the server has answered the subscription, refused or not
        self._check_permitted(since, f"a subscription to {subject}")
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """No more messages; those already here are still delivered (a drain)."""
        self._call(subscription.drain())  # type: ignore[no-untyped-call]

    def publish(self, subject: str, data: bytes, headers: dict[str, str] | None = None) -> None:
        self._call(self._client.publish(subject, data, headers=headers or None))

    def publish_all(self, messages: Sequence[NatsPublish]) -> None:
        """Publish and flush, waiting out an outage within the patience (a batch cut short is published
        again whole: at least once)."""

        async def publish() -> None:
            for m in messages:
                await self._client.publish(m.subject, m.data, reply=m.reply or "", headers=m.headers or None)

        since = len(self._violations)
        patiently(
            lambda timeout: self._call(publish()), self.outage, self._transient, doing="publishing again"
        )
        self.flush()
        # A subject the bridge may not publish to: the server dropped the message, so it must not count
        # as published (the range is not written, its JMS messages stay unacknowledged).
        self._check_permitted(since, "a publish")
        self.outage.clear()

    def publish_status(self, subject: str, status: tuple[int, str], headers: dict[str, str]) -> None:
        """A status reply (`NATS/1.0 408 Request Timeout`), as the server's own no-responders one is:
        nats-py's publish writes no status line, so the message is built here."""
        lines = [f"NATS/1.0 {status[0]} {status[1]}"] + [f"{k}: {v}" for k, v in headers.items()]
        block = ("\r\n".join(lines) + "\r\n\r\n").encode()

        async def send() -> None:
            await self._client._send_command(hpub_cmd(subject, "", block, b""))
            await self._client._flush_pending()  # as publish does

        self._call(send())

    def flush(self) -> None:
        """Everything published so far has reached the server (waits out a reconnection: what was
        published meanwhile waits in nats-py's buffer, sent once it is back)."""
        patiently(lambda timeout: self.ping(5), self.outage, self._transient, doing="flushing again")

    def close(self) -> None:
        self._closing = True  # its disconnection is no outage
        try:
            self._call(self._client.drain())
        except FAILURES as error:
            log.debug("closing %s: %s", self.where, error)
        self._loop.call_soon_threadsafe(self._loop.stop)

    def _call(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(CALL_SECONDS)
