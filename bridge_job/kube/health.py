"""What the job tells the operator about its brokers: the ConfigMap `<bridgeId>-jms-bridge-health`.

A SparkApplication says RUNNING while the job retries a broker that is gone, and nothing moves. So the
job reports each outage of its JMS broker and of Kafka (bridge_job/faults/outages.py) here, and a background
thread writes the latest state of this instance under its own key (`data.<instance>`, a JSON document)
with a merge patch, creating the ConfigMap when it is missing. The operator reads it (Reconciling, with
the reason, while an outage lasts; see docs/operator.md):

    {"jms": {"state": "Reconnecting", "since": "...", "error": "...", "patienceSeconds": 300}, ...}
    {"jms": {"state": "Connected", "since": "..."}, "kafka": {"state": "Connected", ...}, "updated": "..."}

Beside it, in the same document: a checkpoint reset the operator asked for, once done
(`"checkpointReset": {"id", "to", "summary"}`), the records lost to retention that were skipped
(`"recordsLost": {topic: count}`, spark.onDataLoss: skip) and why the job stopped (`"stopped"`).

Only the latest state is written, and a write that fails is retried with the next change or after
`RETRY_SECONDS`: reporting never slows or stops the bridge. The error text is redacted. A job outside a
cluster (no namespace in its config, or no Kubernetes API configured) reports nothing.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, Final

from bridge_job.config import JMS_CONNECTED, JMS_RECONNECTING, HealthKey, JobConfig, health_config_map_name
from bridge_job.faults.stops import BridgeStopped
from bridge_job.kube.api import CONFIG_MAPS, ApiError, Kube, NotConfigured
from bridge_job.kube.ownership import LABEL_BRIDGE_ID, owned
from bridge_job.redaction import redact

log = logging.getLogger("jmsbridge.health")

RECONNECTING: Final = JMS_RECONNECTING
CONNECTED: Final = JMS_CONNECTED
RETRY_SECONDS: Final = 10.0

Publish = Callable[[dict[str, Any]], None]  # writes this instance's document


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class ConnectionHealth:
    """One system's state across the job's callers (`section`: "jms" or "kafka"): reconnecting while any
    of them fails (an outages.OutageListener)."""

    def __init__(
        self,
        publish: Publish | None,
        patience_seconds: float,
        section: str = "jms",
        connected: Callable[[bool], None] = lambda up: None,  # told each change too (telemetry's gauge)
    ) -> None:
        self.publish = publish
        self.patience_seconds = patience_seconds
        self.section = section
        self.connected = connected
        self._lock = threading.Lock()
        self._failing: dict[str, tuple[str, str]] = {}  # caller -> (since, error)
        self._state: str | None = None

    def failing(self, what: str, error: object) -> None:
        with self._lock:
            if what not in self._failing:
                self._failing[what] = (now(), redact(str(error)))
            self._changed()

    def back(self, what: str) -> None:
        with self._lock:
            self._failing.pop(what, None)
            self._changed()

    def _changed(self) -> None:
        state = RECONNECTING if self._failing else CONNECTED
        if state == self._state:
            return
        self._state = state
        self.connected(state == CONNECTED)
        if self.publish is None:
            return
        report: dict[str, Any] = {HealthKey.STATE: state}
        if self._failing:
            since, error = min(self._failing.values())
            patience = int(self.patience_seconds)
            report |= {HealthKey.SINCE: since, HealthKey.ERROR: error, HealthKey.PATIENCE: patience}
        else:
            report[HealthKey.SINCE] = now()
        self.publish({self.section: report})


class HealthConfigMap:
    """Writes the latest document of one instance to the bridge's health ConfigMap, in the background."""

    def __init__(self, kube: Kube, namespace: str, bridge_id: str, instance: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = health_config_map_name(bridge_id)
        self.bridge_id = bridge_id
        self.instance = instance
        self._document: dict[str, Any] = {}
        self._latest: dict[str, Any] | None = None
        self._wake = threading.Condition()
        self._stopping = False
        self._failure: str | None = None
        self._thread = threading.Thread(target=self._run, name="health-report", daemon=True)
        self._thread.start()

    @classmethod
    def for_job(cls, config: JobConfig, instance: str) -> HealthConfigMap | None:
        """None outside a cluster: a config without a namespace, or no Kubernetes API configured."""
        if config.namespace is None:
            return None
        try:
            kube = Kube.shared()
        except NotConfigured:
            return None
        return cls(kube, config.namespace, config.bridge_id, instance)

    def __call__(self, sections: dict[str, Any]) -> None:
        """Sections of this instance's document (`jms`, `checkpointReset`, `recordsLost`), each replacing
        its own: one reporter's news does not wipe another's."""
        with self._wake:
            self._document = {**self._document, **sections, HealthKey.UPDATED: now()}
            self._latest = self._document
            self._wake.notify()

    def report_stop(self, reason: str, message: str) -> None:
        """Why the job stops, written now (it is about to exit); a write that fails is only logged."""
        with self._wake:
            stopped = {HealthKey.REASON: reason, HealthKey.MESSAGE: redact(message)}
            document = {**self._document, HealthKey.STOPPED: stopped}
        try:
            self.write({**document, HealthKey.UPDATED: now()})
        except ApiError as error:
            log.warning("cannot report the stop in ConfigMap %s/%s: %s", self.namespace, self.name, error)

    def stop(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._wake:
                while self._latest is None and not self._stopping:
                    self._wake.wait()
                document, self._latest = self._latest, None
                if document is None:
                    return
            try:
                self.write(document)
                self._failure = None
            except ApiError as error:
                if str(error) != self._failure:  # once per cause, not every retry
                    self._failure = str(error)
                    where = f"{self.namespace}/{self.name}"
                    log.warning("cannot report health in ConfigMap %s: %s", where, error)
                with self._wake:
                    if self._latest is None:  # retried, unless a newer state came meanwhile
                        self._latest = document
                    if self._stopping:
                        return
                    self._wake.wait(RETRY_SECONDS)

    def write(self, document: dict[str, Any]) -> None:
        data = {self.instance: json.dumps(document, sort_keys=True)}
        try:
            self.kube.patch(CONFIG_MAPS, self.namespace, self.name, {"data": data})
        except ApiError as error:
            if not error.not_found:
                raise
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": owned(
                    {
                        "name": self.name,
                        "namespace": self.namespace,
                        "labels": {LABEL_BRIDGE_ID: self.bridge_id},
                    }
                ),
                "data": data,
            }
            try:
                self.kube.create(CONFIG_MAPS, self.namespace, body)
            except ApiError as created:
                if not created.conflict:  # the other instance was first: patch it next time
                    raise
                self.kube.patch(CONFIG_MAPS, self.namespace, self.name, {"data": data})


@contextlib.contextmanager
def stops_reported(report: HealthConfigMap | None) -> Iterator[None]:
    """A hard failure that names its status reason (`BridgeStopped.condition`) is reported before the job
    exits: the operator shows it (a refused JMS login: JmsAuthenticationFailed)."""
    try:
        yield
    except BridgeStopped as error:
        if error.condition is not None and report is not None:
            report.report_stop(error.condition, error.reason)
        raise
