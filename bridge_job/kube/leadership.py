"""Leadership: one instance of a bridge, the holder of a Kubernetes Lease, runs the ingest and the query.

With `failover.standby` the operator runs two instances of the job. Both would consume JMS and write to
Kafka; instead they compete for the `coordination.k8s.io/v1` Lease `<bridgeId>-jms-bridge` in the bridge's
namespace. Its holder is the active instance; the other stands by and takes over when the holder stops
renewing (crashed, stuck, cut off from the API server) or releases the lease (stopped cleanly).

The protocol, with D = `failover.leaseDurationSeconds`:

- Acquire: every D/3, and every second at most, read the Lease, and again the moment the holder's claim
  expires. Absent: create it (409: another instance was faster); in a cluster the operator has created
  it, free, and the job's service account may not create Leases (create cannot be narrowed to one name:
  operator/jmsbridge_operator/identity.py). Free (no holder) or expired: replace it with the
  resourceVersion just read (409: another instance won the race).
  A lease is expired when its record has not changed for D since this instance first saw that record,
  measured on this instance's own clock (as client-go does), so the clocks of different nodes never have
  to agree. A newcomer therefore waits one full D before taking over a lease it has never seen renewed,
  even one held under its own identity (a previous run in a pod of the same name may still be alive).
  Between looks a watch of the Lease notes each change as it is made (a renewal is then seen when it
  happens, not up to a look later); a watch refused or broken off leaves the looks to do it.
- Renew: the holder replaces the Lease (a new `renewTime`) every D/3 from a background thread, with the
  resourceVersion of its own last write: a write by anyone else in between makes it fail with 409. The
  lease is still its own only if it still names this holder *and* the `acquireTime` of this tenure: two
  processes may share an identity (a pod re-created under the same name, two local runs).
- Lose: the holder gives up as soon as it finds another holder (or no Lease), or when no renewal has
  succeeded for 2D/3, counted from when the last successful one was *sent*. Nobody else may take over
  before D after seeing that renewal, so a holder has stopped believing it leads at least D/3 before
  another can start: never two leaders at once. Each request's timeout is capped by the time left, so a
  hung API server cannot keep the renewal thread from noticing. Losing is final for the process: the
  callbacks stop the ingest and the query, and the job exits with `EXIT_LEADERSHIP_LOST`; Kubernetes
  restarts it, and it comes back as the standby.
- Release: a holder that stops cleanly (after its ingest and query stopped) clears `holderIdentity`, so the
  standby takes over at its next poll instead of after D.

With `delivery: exactlyOnce`, transactional ids still fence a zombie writer inside Kafka; the lease keeps
a healthy standby from writing at all.

The election applies to a job whose config names a namespace (the operator renders the bridge's) and asks
for `failover.standby`; `jmsbridge job --no-lease` turns it off for local runs of such a config. The Lease
is read and written through `kubernetes_api.Kube`, configured when the lease is first needed.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, Protocol

from bridge_job.config import JobConfig, lease_holder_identity, lease_name
from bridge_job.faults.stops import BridgeStopped, LeadershipLost
from bridge_job.formats.journal import Epoch
from bridge_job.kube.api import LEASES, ApiError, Kube, NotConfigured
from bridge_job.kube.ownership import LABEL_BRIDGE_ID, owned
from bridge_job.redaction import redact

log = logging.getLogger("jmsbridge.leadership")

EXIT_LEADERSHIP_LOST: Final = 3
_SHORTEST_REQUEST: Final = 0.05  # seconds: a request needs some time to be worth sending
_PAST_EXPIRY: Final = 0.01  # seconds: a standby looks this long after the expiry it waits for


class LeaseConflict(Exception):
    """Someone else wrote the Lease since it was read (HTTP 409)."""


class LeaseRefused(BridgeStopped):
    """The API server refused this instance the lease for good (403, 404): `cause` says which lease and
    what the server answered, apart from the hint the job adds, for whoever words a hint of its own (the
    operator's replicas elect their leader with this class too)."""

    def __init__(self, cause: str, hint: str) -> None:
        super().__init__(f"{cause}; {hint}")
        self.cause = redact(cause)


class _Taken(Exception):
    """Renewing found the lease gone or held by another instance."""


class LeaseStore(Protocol):
    """One Lease, read and written with optimistic concurrency; `timeout` bounds each request (seconds)."""

    namespace: str
    name: str

    def read(self, timeout: float) -> dict[str, Any] | None: ...

    def create(self, body: dict[str, Any], timeout: float) -> dict[str, Any]: ...

    def replace(self, body: dict[str, Any], timeout: float) -> dict[str, Any]: ...

    def changes(self, seconds: int) -> Iterator[dict[str, Any] | None]:
        """The Lease each time it changes (None: deleted), as it changes, for `seconds` at most."""
        ...


# A standby reads the Lease this often (client-go's RetryPeriod is 2 s): it counts a holder's D from when it
# first saw the last renewal, so each second between looks is up to a second more of takeover gap. One GET
# a second per bridge is nothing to an API server. A watch of the Lease (`Leadership._watch`) sees each
# renewal as it is made; the looks remain, for whatever the watch misses.
STANDBY_LOOK_SECONDS = 1.0
WATCH_SECONDS: Final = 300  # how long one watch request lasts before it is made again (client-go: 5-10 min)


class KubernetesLeases:
    """The Lease on the API server."""

    def __init__(self, namespace: str, name: str, kube: Kube | None = None) -> None:
        self.namespace = namespace
        self.name = name
        self._kube = kube if kube is not None else _connect()

    def read(self, timeout: float) -> dict[str, Any] | None:
        return self._kube.get(LEASES, self.namespace, self.name, timeout=timeout)

    def create(self, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        return self._write("POST", LEASES.path(self.namespace), body, timeout)

    def replace(self, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        return self._write("PUT", LEASES.path(self.namespace, self.name), body, timeout)

    def changes(self, seconds: int) -> Iterator[dict[str, Any] | None]:
        for event in self._kube.watch(LEASES, self.namespace, self.name, seconds):
            kind, lease = event.get("type"), event.get("object") or {}
            if kind == "ERROR":  # a Status: the watch ended (410: its resourceVersion is too old)
                raise ApiError(
                    int(lease.get("code") or 0), str(lease.get("reason")), str(lease.get("message"))
                )
            yield None if kind == "DELETED" else lease

    def _write(self, method: str, path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        try:
            written: dict[str, Any] = self._kube.request(method, path, body, timeout=timeout)
        except ApiError as error:
            if error.conflict:
                raise LeaseConflict(f"lease {self.namespace}/{self.name} was changed meanwhile") from None
            raise
        return written


def _connect() -> Kube:
    try:
        return Kube.shared()
    except NotConfigured as error:
        raise BridgeStopped(
            f"failover.standby needs the Kubernetes API for its lease, and none is configured ({error}); "
            "outside a cluster run `jmsbridge job --no-lease`"
        ) from None


def micro_time() -> str:
    """Now as a Kubernetes MicroTime (RFC 3339, microseconds, UTC)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def pod_name() -> str:
    return os.environ.get("HOSTNAME") or socket.gethostname()


def job_leases(config: JobConfig) -> KubernetesLeases | None:
    """The bridge's Lease, when it runs as an active/standby pair (a namespace and failover.standby)."""
    if config.namespace is None or not config.bridge.failover.standby:
        return None
    return KubernetesLeases(config.namespace, lease_name(config.bridge_id))


def tenure_ended(store: LeaseStore, epoch: Epoch, timeout: float = 5.0) -> str | None:
    """Why `epoch`'s tenure is over by the Lease as it is now (another holder, or another `acquireTime`),
    None while it lasts. A task asks before it takes a journal id, since taking it fences whoever holds it:
    a task of a former active, retried on its executors after a takeover, would fence the new active's.
    ApiError when the Lease cannot be read."""
    spec = (store.read(timeout) or {}).get("spec") or {}
    holder, acquired = spec.get("holderIdentity"), spec.get("acquireTime")
    if holder == epoch.holder and acquired == epoch.tenure_start:
        return None
    return (
        f"the lease {store.namespace}/{store.name} is held by {holder or 'nobody'} (acquired {acquired}), "
        f"no longer by {epoch.holder} (acquired {epoch.tenure_start})"
    )


class Leadership:
    """One instance's part in electing the active instance of a bridge (see the module docstring)."""

    def __init__(
        self,
        store: LeaseStore,
        identity: str,
        duration_seconds: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        self.store = store
        # On the Lease (`<bridgeId>-jms-bridge`): the operator watches only Leases labelled so.
        self.labels = dict(labels or {})
        self.identity = identity
        self.duration_seconds = duration_seconds
        self.renew_period = duration_seconds / 3
        self.renew_deadline = duration_seconds - self.renew_period
        self.retry_period = self.renew_period / 3
        # A standby sees a renewal up to one look late, and takes over D after it saw it: looking more
        # often than D/3 brings a takeover closer to D after the last renewal, never before it.
        self.look_period = min(self.renew_period, STANDBY_LOOK_SECONDS)
        self.lost = threading.Event()
        self.loss_reason: str | None = None
        self.holder: str | None = None  # the holder last seen
        self.transitions: int | None = None  # the lease's leaseTransitions last seen (telemetry)
        self._clock = clock
        self._lock = threading.Lock()
        self._leading = False
        self._lease: dict[str, Any] | None = None  # as last written by this instance
        self._tenure: str | None = None  # the acquireTime of this instance's tenure, as the server has it
        self._valid_until = 0.0  # on `clock`: when this instance stops believing it leads
        self._observed: tuple[str, float] | None = None  # a foreign record, and when it was first seen
        self._expires: float | None = None  # on `clock`: when the holder last seen loses its claim
        self._stopping = threading.Event()
        self._renewer: threading.Thread | None = None
        self._on_lost: list[Callable[[str], None]] = []
        self._on_renewed: list[Callable[[], None]] = []

    @classmethod
    def for_job(cls, config: JobConfig, instance: str) -> Leadership | None:
        """The job's part in the election; None when it runs alone (no standby, or no namespace: local)."""
        store = job_leases(config)
        if store is None:
            return None
        identity = lease_holder_identity(instance, pod_name())
        labels = {LABEL_BRIDGE_ID: config.bridge_id}
        return cls(store, identity, config.bridge.failover.lease_duration_seconds, labels=labels)

    @property
    def lease(self) -> str:
        return f"{self.store.namespace}/{self.store.name}"

    def tenure(self) -> tuple[str | None, int | None]:
        """This tenure's `acquireTime` and the `leaseTransitions` it began with (None, None: not leading)."""
        with self._lock:
            spec = (self._lease or {}).get("spec") or {}
            if not self._leading:
                return None, None
        transitions = spec.get("leaseTransitions")
        return self._tenure, None if transitions is None else int(transitions)

    @property
    def valid_until(self) -> float:
        """On this instance's clock: until when it believes it leads (0: it does not lead)."""
        with self._lock:
            return self._valid_until if self._leading else 0.0

    @property
    def is_leader(self) -> bool:
        with self._lock:
            return self._leading and self._clock() < self._valid_until

    # --- standing by ---

    def acquire(self, stopping: threading.Event | None = None) -> bool:
        """Block until this instance holds the lease (True) or `stopping` is set (False)."""
        stopping = stopping or threading.Event()
        watched = threading.Event()  # set: the watch ends
        threading.Thread(target=self._watch, args=(watched,), name="lease-watch", daemon=True).start()
        try:
            return self._stand_by(stopping)
        finally:
            watched.set()

    def _stand_by(self, stopping: threading.Event) -> bool:
        announced: str | None = None
        while not stopping.is_set() and not self.lost.is_set():
            try:
                if self.try_acquire():
                    return True
            except ApiError as error:
                if error.permanent:
                    raise LeaseRefused(
                        f"cannot take the lease {self.lease}: {error}",
                        "the job's service account needs get and update on it (the operator grants them to "
                        "the bridge's own service account), and the Lease must exist: the operator creates "
                        "it for a bridge with failover.standby (elsewhere the account needs create on leases "
                        f"in namespace {self.store.namespace})",
                    ) from None
                log.warning("cannot read the lease %s (retrying): %s", self.lease, error)
            if self.holder != announced:
                announced = self.holder
                log.info(
                    "standby: waiting for lease %s held by %s (this instance: %s)",
                    self.lease,
                    self.holder or "nobody",
                    self.identity,
                )
            stopping.wait(self.seconds_to_next_look())
        return False

    def _watch(self, ended: threading.Event) -> None:
        """While standing by: note each change of the Lease when it is made, so that a holder's D counts
        from its renewal and not from the next look (up to a second later). Only a head start: a watch
        refused (a Role without `watch`) leaves the looks alone; one broken off is made again."""
        while not ended.is_set():
            try:
                for lease in self.store.changes(WATCH_SECONDS):
                    if ended.is_set():
                        return
                    if lease is not None:
                        self._saw(lease, self._clock())
            except ApiError as error:
                if error.permanent or error.not_found:
                    self._unwatched(error)
                    return
                log.debug("watching lease %s: %s", self.lease, error)
            except Exception as error:  # a head start only: the looks go on
                self._unwatched(error)
                return
            ended.wait(self.look_period)  # ended or broken off: watched again after a look's time

    def _unwatched(self, error: Exception) -> None:
        log.info("not watching lease %s (%s): looking every %gs", self.lease, error, self.look_period)

    def _saw(self, lease: dict[str, Any], seen: float) -> dict[str, Any]:
        """Note `lease` as seen at `seen` unless its record was seen before; its spec."""
        spec: dict[str, Any] = lease.get("spec") or {}
        record = json.dumps(spec, sort_keys=True)
        with self._lock:
            if self._observed is None or self._observed[0] != record:
                self._observed = (record, seen)
        return spec

    def seconds_to_next_look(self) -> float:
        """The look period, or less when the lease last seen expires sooner: the takeover then comes when
        it expires, not up to a look period later."""
        if self._expires is None:
            return self.look_period
        return min(self.look_period, max(self._expires - self._clock(), 0.0) + _PAST_EXPIRY)

    def try_acquire(self) -> bool:
        """One attempt at taking the lease; True when this instance holds it afterwards."""
        with self._lock:
            if self._leading:
                return self._clock() < self._valid_until
        if self.lost.is_set():
            return False  # never again in this process: it restarts as the standby
        current = self.store.read(self.renew_period)
        seen = self._clock()
        if current is None:
            body = {
                "apiVersion": LEASES.api_version,
                "kind": "Lease",
                "metadata": owned({"name": self.store.name, "namespace": self.store.namespace}),
                "spec": self._acquired_spec({}, transitions=0),
            }
            return self._take(self.store.create, self._labelled(body), "created")
        spec = self._saw(current, seen)
        holder = spec.get("holderIdentity") or None
        self.holder = holder
        self.transitions = int(spec.get("leaseTransitions") or 0)
        self._expires = None
        if holder is not None:
            duration = float(spec.get("leaseDurationSeconds") or self.duration_seconds)
            with self._lock:
                first_seen = self._observed[1] if self._observed is not None else seen
            if seen < first_seen + duration:
                self._expires = first_seen + duration
                return False
            log.info("lease %s of %s not renewed for %gs: taking over", self.lease, holder, duration)
        # The Lease as the operator made it (never held: no acquireTime) starts the first tenure, as a
        # create does; any other taking is a transition (the status' `failovers`).
        transitions = int(spec.get("leaseTransitions") or 0) + (1 if spec.get("acquireTime") else 0)
        body = {**current, "spec": self._acquired_spec(spec, transitions)}
        return self._take(self.store.replace, self._labelled(body), "taken")

    def _take(
        self, write: Callable[[dict[str, Any], float], dict[str, Any]], body: dict[str, Any], how: str
    ) -> bool:
        """Write the lease as ours; False when another instance wrote it first (409)."""
        sent = self._clock()
        try:
            written = write(body, self.renew_period)
        except LeaseConflict:
            log.info("lease %s was %s by another instance first", self.lease, how)
            return False
        self._lead(written, sent)
        return True

    def _acquired_spec(self, spec: dict[str, Any], transitions: int) -> dict[str, Any]:
        now = micro_time()
        return {
            **spec,
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.duration_seconds,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def _lead(self, written: dict[str, Any], sent: float) -> None:
        with self._lock:
            self._lease = written
            self._tenure = (written.get("spec") or {}).get("acquireTime")
            self._leading = True
            self._valid_until = sent + self.renew_deadline
        self.holder = self.identity
        self.transitions = int((written.get("spec") or {}).get("leaseTransitions") or 0)
        self._stopping.clear()
        log.info("active: holding lease %s as %s", self.lease, self.identity)
        self._renewer = threading.Thread(target=self._renew_loop, name="lease-renewal", daemon=True)
        self._renewer.start()

    # --- leading ---

    def on_lost(self, callback: Callable[[str], None]) -> None:
        """Call `callback(reason)` when the lease is lost (at once, if it already is)."""
        with self._lock:
            if not self.lost.is_set():
                self._on_lost.append(callback)
                return
        callback(self.loss_reason or "")

    def on_renewed(self, callback: Callable[[], None]) -> None:
        """Call `callback()` after each renewal (from the renewal thread): `valid_until` moved on."""
        with self._lock:
            self._on_renewed.append(callback)

    def check(self) -> None:
        """Raise LeadershipLost unless this instance still holds the lease (the driver loop asks)."""
        with self._lock:
            expired = self._leading and self._clock() >= self._valid_until
        if expired:
            self._lose(f"no renewal succeeded for {self.renew_deadline:g}s")
        if self.lost.is_set():
            raise LeadershipLost(self.loss_reason or "the lease was lost")

    def _time_left(self) -> float:
        with self._lock:
            return self._valid_until - self._clock()

    def _request_timeout(self) -> float:
        left = self._time_left()
        if left <= _SHORTEST_REQUEST:
            raise _Taken(f"no renewal succeeded for {self.renew_deadline:g}s")
        return min(left, self.renew_period)

    def _renew_loop(self) -> None:
        delay = self.renew_period
        while not self._stopping.wait(max(0.0, min(delay, self._time_left()))):
            try:
                self._renew()
                delay = self.renew_period
            except _Taken as taken:
                self._lose(str(taken))
                return
            except (ApiError, LeaseConflict) as error:
                log.warning("renewing lease %s failed (%.1fs left): %s", self.lease, self._time_left(), error)
                delay = self.retry_period

    def _renew(self) -> None:
        with self._lock:
            lease = self._lease
        assert lease is not None
        sent = self._clock()
        try:
            try:
                written = self.store.replace(self._renewed(lease), self._request_timeout())
            except LeaseConflict:
                current = self.store.read(self._request_timeout())
                if current is None:
                    raise _Taken(f"lease {self.lease} was deleted") from None
                spec = current.get("spec") or {}
                holder = spec.get("holderIdentity")
                if holder != self.identity or spec.get("acquireTime") != self._tenure:
                    raise _Taken(f"lease {self.lease} is held by {holder or 'nobody'} now") from None
                sent = self._clock()  # someone only touched it (labels...): still ours
                written = self.store.replace(self._renewed(current), self._request_timeout())
        except ApiError as error:
            if error.not_found:
                raise _Taken(f"lease {self.lease} was deleted") from None
            raise
        with self._lock:
            if not self._leading:
                return
            self._lease = written
            self._valid_until = sent + self.renew_deadline
            callbacks = list(self._on_renewed)
        for callback in callbacks:
            try:
                callback()
            except Exception:  # the lease itself is renewed: a caller's trouble must not lose it
                log.exception("telling of the lease's renewal failed")

    def _renewed(self, lease: dict[str, Any]) -> dict[str, Any]:
        spec = {
            **(lease.get("spec") or {}),
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.duration_seconds,
            "renewTime": micro_time(),
        }
        return self._labelled({**lease, "spec": spec})

    def _labelled(self, lease: dict[str, Any]) -> dict[str, Any]:
        """The Lease with our labels (a Lease an older job created gets them at its next write)."""
        metadata = dict(lease.get("metadata") or {})
        if self.labels:
            metadata["labels"] = {**(metadata.get("labels") or {}), **self.labels}
        return {**lease, "metadata": metadata}

    def _lose(self, reason: str) -> None:
        with self._lock:
            if not self._leading:
                return
            self._leading = False
            self.loss_reason = reason
            self.lost.set()
            callbacks = list(self._on_lost)
        log.error("lost lease %s: %s", self.lease, reason)
        for callback in callbacks:
            try:
                callback(reason)
            except Exception:
                log.exception("stopping after losing the lease failed")

    # --- stopping ---

    def stop(self, release: bool = True) -> None:
        """Stop renewing. With `release` (only after processing stopped) the standby takes over at once;
        without, the lease runs out after its duration, as if this process had crashed."""
        self._stopping.set()
        if self._renewer is not None and self._renewer is not threading.current_thread():
            self._renewer.join()
        with self._lock:
            leading, lease = self._leading, self._lease
            self._leading = False
        if not (release and leading and lease is not None):
            return
        spec = {k: v for k, v in (lease.get("spec") or {}).items() if k != "holderIdentity"}
        try:
            self.store.replace({**lease, "spec": {**spec, "renewTime": micro_time()}}, self.renew_period)
            log.info("released lease %s", self.lease)
        except (LeaseConflict, ApiError) as error:
            log.warning("could not release lease %s (it runs out by itself): %s", self.lease, error)
