"""Each bridge's Kafka checks: when to check, with which credentials, and what to do with the outcome.

One asyncio task per bridge (a kopf daemon, started when the operator sees the bridge and stopped when
the bridge is deleted or the operator stops) loops:

1. take the config the latest reconciliation asked the gate about (`KafkaGate.wanted`), or sleep until
   a reconciliation asks;
2. read the SASL credentials from the bridge's Secret (`spec.kafka.sasl.credentialsSecretRef`; the
   schema registry's too, `spec.kafka.schemaRegistry.credentialsSecretRef`), and the files its Kafka
   settings name (TLS) from the Secrets its pods mount them from (`kafka_checks.material`), on a thread;
   they go to the clients and nowhere else (no log line, status, Event or exception);
3. check (`probe.check_bridge`: the probe runs on the checks' own thread pool, bounded by its
   deadline) and record the verdict in the gate;
4. when the verdict changed, reconcile the bridge (on a thread), which stops, holds or resumes its
   applications and writes its conditions;
5. sleep for the check's `retry_after` (the interval; shorter while the cluster does not answer), or
   until the gate wakes it because the bridge now needs something not checked yet.

So a slow or dead cluster delays only its own bridges' checks; kopf's event loop only awaits. A steady
bridge costs one probe per interval and no API write.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import time
from collections.abc import Mapping
from typing import Any

import kopf

from bridge_job.config import JobConfig, KafkaSpec, SecretRef
from bridge_job.contract.clients import SECRETS, ApiError, KafkaCredentials, Kube
from jmsbridge_operator import metrics
from jmsbridge_operator.condition_catalogue import CREDENTIALS_NOT_FOUND
from jmsbridge_operator.handlers.pauses import pause
from jmsbridge_operator.kafka_checks import probe
from jmsbridge_operator.kafka_checks.evaluation import CheckSettings
from jmsbridge_operator.kafka_checks.gate import KafkaGate, Key, held, verdict_of
from jmsbridge_operator.kafka_checks.material import read_kafka_files
from jmsbridge_operator.kafka_checks.mounted_files import KafkaFileUnreadable
from jmsbridge_operator.reconciler import EventSink, Reconciler, RoutesLookup
from jmsbridge_operator.secret_marks import bridges_of, marked_for, not_marked

logger = logging.getLogger("jmsbridge_operator")


class CredentialsNotFound(Exception):
    """The bridge's Secret, or a key in it, cannot be read; the message names them, never a value."""


def read_credentials(
    kube: Kube, namespace: str, kafka: KafkaSpec, marked_for_bridge: str | None = None
) -> KafkaCredentials | None:
    """The SASL username and password from the bridge's Secret; None without SASL. With
    `marked_for_bridge`, only from a Secret marked for that bridge (secret_marks.py): the keys go to the
    bootstrap servers the bridge chose."""
    if kafka.sasl is None:
        return None
    ref = kafka.sasl.credentials_secret_ref
    pair = read_secret_pair(kube, namespace, ref, "spec.kafka.sasl.credentialsSecretRef", marked_for_bridge)
    return KafkaCredentials(*pair)


def read_registry_credentials(
    kube: Kube, namespace: str, kafka: KafkaSpec, marked_for_bridge: str | None = None
) -> tuple[str, str] | None:
    """The schema registry's username and password from the bridge's Secret; None without one."""
    registry = kafka.schema_registry
    if registry is None or registry.credentials_secret_ref is None:
        return None
    field = "spec.kafka.schemaRegistry.credentialsSecretRef"
    return read_secret_pair(kube, namespace, registry.credentials_secret_ref, field, marked_for_bridge)


def read_secret_pair(
    kube: Kube, namespace: str, ref: SecretRef, field: str, marked_for_bridge: str | None
) -> tuple[str, str]:
    """A username and password from the Secret `ref` names (at `field` of the spec); CredentialsNotFound
    names what is missing, forbidden or unmarked."""
    where = f"Secret {ref.name} ({field})"
    try:
        secret = kube.get(SECRETS, namespace, ref.name)
    except ApiError as error:
        if error.status == 403:
            raise CredentialsNotFound(
                f"the operator may not read {where}: it needs `get` on secrets in namespace {namespace}"
            ) from None
        raise
    if secret is None:
        raise CredentialsNotFound(f"{where} not found in namespace {namespace}")
    if marked_for_bridge is not None and not marked_for(bridges_of(secret), marked_for_bridge):
        raise CredentialsNotFound(not_marked(ref.name, marked_for_bridge, field))
    data: Mapping[str, Any] = secret.get("data") or {}
    missing = [key for key in (ref.username_key, ref.password_key) if key not in data]
    if missing:
        raise CredentialsNotFound(f"{where} has no key {' or '.join(repr(key) for key in missing)}")
    values = []
    for key in (ref.username_key, ref.password_key):
        try:
            values.append(base64.b64decode(str(data[key]), validate=True).decode("utf-8"))
        except (binascii.Error, UnicodeDecodeError):
            raise CredentialsNotFound(f"{where}: key {key!r} is not base64-encoded UTF-8 text") from None
    return values[0], values[1]


def _journal_created(config: JobConfig, notes: tuple[str, ...]) -> str | None:
    """The note saying that this check created the journal topic, if it did."""
    prefix = f"created topic {config.journal_topic} "
    return next((note for note in notes if note.startswith(prefix)), None)


class BridgeChecks:
    """The schedule of one bridge's checks (one per bridge, run by its kopf daemon)."""

    def __init__(
        self,
        gate: KafkaGate,
        reconciler: Reconciler,
        settings: CheckSettings,
        key: Key,
        body: Mapping[str, Any],
        routes: RoutesLookup,
        events: EventSink | None = None,
    ) -> None:
        self.gate = gate
        self.reconciler = reconciler
        self.settings = settings
        self.key = key
        self.body = body  # kopf's live view of the bridge: the object Events are about
        self.routes = routes
        self.events = events or reconciler.events
        self._unreadable = 0  # consecutive checks without credentials: their retries back off

    async def run(self, stopped: kopf.DaemonStopped) -> None:
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()

        def wake_up() -> None:  # called from the reconciler's threads
            loop.call_soon_threadsafe(wake.set)

        self.gate.subscribe(self.key, wake_up)
        unannounced = False  # a verdict the bridge's reconciliation has not taken in yet
        try:
            while not stopped:
                wake.clear()
                delay: float | None = None  # nothing asked yet: sleep until a reconciliation asks
                config = self.gate.wanted(self.key)
                if config is not None:
                    delay, changed = await self.check(config)
                    if stopped:
                        break
                    if changed or unannounced:
                        unannounced = not await self.reconcile()
                        if unannounced:
                            delay = min(delay, self.settings.retry_seconds)
                await self._pause(stopped, wake, delay)
        finally:
            self.gate.forget(self.key)

    async def check(self, config: JobConfig) -> tuple[float, bool]:
        """Check once and record the verdict: (seconds until the next check, whether it changed)."""
        namespace, kube = self.key[0], self.reconciler.kube
        bridge = None if self.reconciler.policy.unmarked_secrets else self.key[1]  # Secrets marked for it
        try:
            credentials = await asyncio.to_thread(
                read_credentials, kube, namespace, config.bridge.kafka, bridge
            )
            files = await asyncio.to_thread(read_kafka_files, kube, namespace, config.bridge, bridge)
            registry_credentials = await asyncio.to_thread(
                read_registry_credentials, kube, namespace, config.bridge.kafka, bridge
            )
        except (CredentialsNotFound, KafkaFileUnreadable) as problem:
            self._unreadable += 1
            backoff = self.settings.retry_seconds * 2 ** min(self._unreadable - 1, 16)
            verdict = held(CREDENTIALS_NOT_FOUND, str(problem))
            state = self.gate.state(self.key, config)
            delay = min(self.settings.interval_seconds, backoff)
        except ApiError as error:  # the API server had a moment: keep the last verdict, try again soon
            logger.warning("Kafka check of %s/%s: cannot read its Secret: %s", *self.key, error)
            return self.settings.retry_seconds, False
        else:
            self._unreadable = 0
            result = await probe.check_bridge(
                config,
                credentials,
                now=time.time(),
                state=self.gate.state(self.key, config),
                settings=self.settings,
                files=files,
                registry_credentials=registry_credentials,
            )
            verdict, state, delay = verdict_of(result), result.state, result.retry_after
            created = _journal_created(config, result.notes)
            if created is not None:
                self.events(self.body, "Normal", "KafkaTopicCreated", created[:1].upper() + created[1:])
        metrics.KAFKA_CHECKS.labels(verdict.conditions[0].reason).inc()
        changed = self.gate.record(self.key, config, verdict, state)
        if changed:
            outcome = "ready" if verdict.open else f"{verdict.reason}: {verdict.message}"
            logger.info("Kafka check of %s/%s: %s", *self.key, outcome)
        return delay, changed

    async def reconcile(self) -> bool:
        """Reconcile the bridge for a new verdict; False when that failed (to be tried again)."""
        try:
            await asyncio.to_thread(self.reconciler.reconcile, *self.key, self.routes)
        except Exception as error:  # e.g. a conflict: the next round tries again
            logger.warning("Reconciling %s/%s after its Kafka check failed: %s", *self.key, error)
            return False
        return True

    @staticmethod
    async def _pause(stopped: kopf.DaemonStopped, wake: asyncio.Event, delay: float | None) -> None:
        """Sleep `delay` seconds (None: without limit) or until woken or stopped, whichever comes first."""
        woken = asyncio.ensure_future(wake.wait())
        halted = asyncio.ensure_future(pause(stopped, delay))  # not stopped.wait: see pauses.py
        try:
            await asyncio.wait({woken, halted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            woken.cancel()
            halted.cancel()


class KafkaChecks:
    """The operator's Kafka checks: the gate its reconciler asks, and each bridge's schedule that feeds it."""

    def __init__(self, settings: CheckSettings) -> None:
        self.settings = settings
        self.gate = KafkaGate()

    async def run(
        self,
        reconciler: Reconciler,
        key: Key,
        body: Mapping[str, Any],
        routes: RoutesLookup,
        stopped: kopf.DaemonStopped,
    ) -> None:
        """Check one bridge until it is deleted or the operator stops (its kopf daemon)."""
        await BridgeChecks(self.gate, reconciler, self.settings, key, body, routes).run(stopped)
