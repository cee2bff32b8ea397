"""The active/standby election over a Kubernetes Lease, against a real API server (no Spark, no brokers).

Durations are 2 s (renewals every 2/3 s); every wait is on a condition with a deadline. Where a test is
about expiry (a lease not renewed for its duration, renewals failing until their deadline), the
contenders share a `Clock` that only the test moves, so expiry happens exactly when the test says and
never by the test's own slowness.
"""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml

from bridge_job.config import JmsBridge, JobConfig, job_config, lease_holder_identity, lease_name
from bridge_job.faults.stops import BridgeStopped, LeadershipLost
from bridge_job.formats.journal import Epoch
from bridge_job.kube.api import ApiError, Kube
from bridge_job.kube.leadership import (
    KubernetesLeases,
    Leadership,
    LeaseStore,
    tenure_ended,
)
from bridge_job.kube.ownership import LABEL_BRIDGE_ID
from bridge_job.supervision.telemetry import Metrics
from jmsbridge.cli import parser
from testbed.apiserver.chart import job_kubeconfig
from testbed.apiserver.client import KubeApi
from testbed.builders import config

# As the pods of the bridge `orders` in `apps`: its own ServiceAccount and Role, and its free Lease, as the
# operator makes them (operator/jmsbridge_operator/identity.py).
pytestmark = pytest.mark.usefixtures("as_bridge_job")

LEASES = "coordination.k8s.io/v1"
NAMESPACE = "apps"
LEASE = lease_name("orders")
DURATION = 2


def identity(instance: str) -> str:
    return lease_holder_identity(instance, f"orders-{instance}-driver")


class Clock:
    """The contenders' lease clock, moved only by the test (their polls and renewals still run in time)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def leadership(
    instance: str, store: LeaseStore | None = None, clock: Callable[[], float] = time.monotonic
) -> Leadership:
    store = store or KubernetesLeases(NAMESPACE, LEASE)
    return Leadership(store, identity(instance), DURATION, clock=clock)


def lease_spec(kube: KubeApi) -> dict[str, Any]:
    lease = kube.get(LEASES, "Lease", LEASE, NAMESPACE)
    assert lease is not None
    spec: dict[str, Any] = lease["spec"]
    return spec


def holders(kube: KubeApi) -> list[str | None]:
    """The holder of every stored version of the lease since the operator made it free, oldest first."""
    return [
        (version.get("spec") or {}).get("holderIdentity") if version else None
        for version in kube.history(LEASES, "Lease", LEASE, NAMESPACE)
        if not version or version.get("spec")  # not the operator's free Lease: no record at all yet
    ]


class Contender:
    """An instance standing by in a thread until it holds the lease, as the job does before it runs."""

    def __init__(self, instance: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.leadership = leadership(instance, clock=clock)
        self.identity = self.leadership.identity
        self.stopping = threading.Event()
        self.leading_since: float | None = None
        self.thread = threading.Thread(target=self._stand_by, name=f"contender-{instance}", daemon=True)
        self.thread.start()

    def _stand_by(self) -> None:
        if self.leadership.acquire(self.stopping):
            self.leading_since = time.monotonic()

    @property
    def leads(self) -> bool:
        return self.leading_since is not None and self.leadership.is_leader

    def stop(self, release: bool = True) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)
        self.leadership.stop(release=release)


Start = Callable[..., Contender]


@pytest.fixture()
def start(kube_api: KubeApi, as_bridge_job: Path) -> Iterator[Start]:
    """Start contenders (`start("a", clock)`) as the bridge's pods; all stop renewing before the test's
    objects go away."""
    started: list[Contender] = []

    def starter(instance: str, clock: Callable[[], float] = time.monotonic) -> Contender:
        started.append(Contender(instance, clock))
        return started[-1]

    yield starter
    for contender in started:
        contender.stop()


def wait_until_seen(kube: KubeApi, standby: Contender, holder: Contender) -> None:
    """Until the standby has read the lease as held by `holder` (it measures expiry from then)."""
    kube.wait_for(lambda: standby.leadership.holder == holder.identity, timeout=10, what="standby saw it")


# ---------------------------------------------------------------------------------------------------


def test_two_contenders_one_leader(kube_api: KubeApi, start: Start) -> None:
    a, b = start("a"), start("b")
    leader = kube_api.wait_for(
        lambda: next((c for c in (a, b) if c.leads), None), timeout=10, what="a leader"
    )
    other = b if leader is a else a
    # Renewals for longer than a lease duration: the other one never takes over.
    renewals: set[str] = set()

    def renewed_four_times() -> bool:
        renewals.add(lease_spec(kube_api)["renewTime"])
        return len(renewals) >= 4

    kube_api.wait_for(renewed_four_times, timeout=10, what="renewals")
    assert other.leading_since is None and not other.leadership.is_leader
    assert other.leadership.holder == leader.identity
    assert set(holders(kube_api)) == {leader.identity}  # every version of the lease: one holder
    assert lease_spec(kube_api)["leaseTransitions"] == 0
    assert lease_spec(kube_api)["leaseDurationSeconds"] == DURATION


def test_crashed_leader_is_replaced_after_the_duration(kube_api: KubeApi, start: Start) -> None:
    clock = Clock()
    a = start("a", clock)
    kube_api.wait_for(lambda: a.leads, timeout=10, what="a leads")
    b = leadership("b", clock=clock)
    metrics = Metrics("orders")  # what b's job serves about its role
    metrics.follow_role("b", b)
    active, lease = {"bridge": "orders", "bridge_instance": "b"}, {"bridge": "orders"}
    value = metrics.registry.get_sample_value
    a.stop(release=False)  # a crash: renewals stop, nothing is released
    assert not b.try_acquire()  # b sees a's last record
    assert (value("jmsbridge_active", active), value("jmsbridge_lease_transitions", lease)) == (0, 0)
    assert b.seconds_to_next_look() == b.look_period

    clock.advance(DURATION - 0.01)
    assert not b.try_acquire()  # not a moment too early: unchanged for less than a full duration
    assert b.seconds_to_next_look() == pytest.approx(0.02)  # it looks again as the claim expires
    clock.advance(0.01)
    try:
        assert b.try_acquire()
        spec = lease_spec(kube_api)
        assert spec["holderIdentity"] == b.identity and spec["leaseTransitions"] == 1
        assert holders(kube_api)[-2:] == [a.identity, b.identity]
        assert (value("jmsbridge_active", active), value("jmsbridge_lease_transitions", lease)) == (1, 1)
    finally:
        b.stop()


def test_a_standby_counts_the_duration_from_the_last_renewal_however_seldom_it_looks(
    kube_api: KubeApi, as_bridge_job: Path
) -> None:
    """The standby watches the Lease (the bridge's Role grants watch on it): each renewal is seen as it is
    made, so the takeover comes D after the holder's last renewal, not D after the look that first saw it.
    Here the standby looks only when the claim it saw expires: looking alone, it would first see a's last
    renewal at its second look, D after its first, and take over at least D + 1 s after that renewal."""
    duration = 3  # renewals every second
    holder = Leadership(KubernetesLeases(NAMESPACE, LEASE), identity("a"), duration)
    standby = Leadership(KubernetesLeases(NAMESPACE, LEASE), identity("b"), duration)
    standby.look_period = 60.0
    assert holder.acquire()
    taken: list[float] = []

    def stand_by() -> None:
        if standby.acquire():
            taken.append(time.time())

    thread = threading.Thread(target=stand_by, daemon=True)
    try:
        thread.start()
        kube_api.wait_for(lambda: standby.holder == holder.identity, timeout=10, what="b's first look")
        first = lease_spec(kube_api)["renewTime"]
        renewed = lambda: (spec := lease_spec(kube_api))["renewTime"] != first and spec  # noqa: E731
        second = kube_api.wait_for(renewed, timeout=10, what="a renewal")["renewTime"]
        kube_api.wait_for(lambda: lease_spec(kube_api)["renewTime"] != second, timeout=10, what="another")
        holder.stop(release=False)  # a crash, before b's second look
        last = datetime.datetime.fromisoformat(lease_spec(kube_api)["renewTime"]).timestamp()
        thread.join(timeout=3 * duration)
        assert taken, "b did not take over"
        assert duration - 0.1 <= taken[0] - last < duration + 0.75
    finally:
        standby.stop()


def test_clean_release_hands_over_at_once(kube_api: KubeApi, start: Start) -> None:
    clock = Clock()  # it never moves here: nothing can expire
    a = start("a", clock)
    kube_api.wait_for(lambda: a.leads, timeout=10, what="a leads")
    b = leadership("b", clock=clock)
    assert not b.try_acquire()
    a.stop()  # releases

    try:
        assert b.try_acquire()  # at its next look, without waiting for anything to expire
        assert holders(kube_api)[-3:] == [a.identity, None, b.identity]
        assert lease_spec(kube_api)["leaseTransitions"] == 1
    finally:
        b.stop()


def test_a_task_of_the_former_holder_finds_its_tenure_over(kube_api: KubeApi, start: Start) -> None:
    """What an ingest task asks before it takes a journal id (ingest/interval.py)."""
    clock = Clock()
    a = start("a", clock)
    kube_api.wait_for(lambda: a.leads, timeout=10, what="a leads")
    acquired, transitions = a.leadership.tenure()
    epoch = Epoch(a.identity, "a", acquired, transitions)
    store = KubernetesLeases(NAMESPACE, LEASE)
    assert tenure_ended(store, epoch) is None
    a.stop()  # releases
    b = leadership("b", clock=clock)
    try:
        assert b.try_acquire()
        said = tenure_ended(store, epoch)
        assert said is not None
        assert f"held by {b.identity}" in said and f"no longer by {a.identity} (acquired {acquired})" in said
    finally:
        b.stop()


@pytest.mark.parametrize(
    "thief",
    [{"holderIdentity": "thief/pod"}, {"acquireTime": "2030-01-01T00:00:00.000000Z"}],
    ids=["other-holder", "same-identity-other-tenure"],
)
def test_a_stolen_lease_is_noticed_within_one_renew_period(
    kube_api: KubeApi, start: Start, thief: dict[str, str]
) -> None:
    a = start("a")
    kube_api.wait_for(lambda: a.leads, timeout=10, what="a leads")
    reasons: list[str] = []
    a.leadership.on_lost(reasons.append)

    kube_api.patch(LEASES, "Lease", LEASE, NAMESPACE, {"spec": thief})
    stolen = time.monotonic()
    # On the callbacks, not on `lost`: that is set first, and the callbacks run after it (outside the lock).
    kube_api.wait_for(lambda: reasons, timeout=a.leadership.renew_period + 1, what="loss")
    assert time.monotonic() - stolen <= a.leadership.renew_period + 0.5
    assert a.leadership.lost.is_set()
    holder = thief.get("holderIdentity", a.identity)
    assert reasons == [a.leadership.loss_reason] and f"held by {holder}" in reasons[0]
    assert not a.leadership.is_leader
    with pytest.raises(LeadershipLost, match="held by"):
        a.leadership.check()
    late: list[str] = []
    a.leadership.on_lost(late.append)  # registered after the fact: called at once
    assert late == reasons
    a.stop()  # must not release what is not its own any more
    assert lease_spec(kube_api) | thief == lease_spec(kube_api)
    assert not a.leadership.try_acquire()  # never again in this process: it restarts as the standby


class Intercepted:
    """The Lease on the API server, with a hook the test sets before each request (`write`: create,
    replace)."""

    def __init__(self, store: KubernetesLeases) -> None:
        self.store = store
        self.namespace, self.name = store.namespace, store.name

    def before(self, write: bool) -> None:
        pass

    def read(self, timeout: float) -> dict[str, Any] | None:
        self.before(write=False)
        return self.store.read(timeout)

    def create(self, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        self.before(write=True)
        return self.store.create(body, timeout)

    def replace(self, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        self.before(write=True)
        return self.store.replace(body, timeout)

    def changes(self, seconds: int) -> Iterator[dict[str, Any] | None]:
        return iter(())  # these instances look, as ones refused the watch do (the watch: its own tests)


class Unreachable(Intercepted):
    """A store that stops answering when `down` is set (the API server cut off)."""

    def __init__(self, store: KubernetesLeases) -> None:
        super().__init__(store)
        self.down = threading.Event()
        self.attempts = 0

    def before(self, write: bool) -> None:
        self.attempts += 1
        if self.down.is_set():
            raise ApiError(0, "ConnectionRefusedError", "[Errno 111] Connection refused")


def test_failing_renewals_give_up_before_anyone_else_may_take_over(kube_api: KubeApi) -> None:
    clock = Clock()
    store = Unreachable(KubernetesLeases(NAMESPACE, LEASE))
    a, b = leadership("a", store, clock), leadership("b", clock=clock)
    assert a.try_acquire()
    reasons: list[str] = []
    a.on_lost(reasons.append)
    try:
        kube_api.wait_for(lambda: lease_spec(kube_api)["renewTime"] != lease_spec(kube_api)["acquireTime"])
        store.down.set()
        assert not b.try_acquire()  # b has seen a's last renewal

        # a's renewals fail; it holds on until its renew deadline (2/3 of the duration) has passed.
        clock.advance(a.renew_deadline - 0.2)
        attempts = store.attempts
        kube_api.wait_for(lambda: store.attempts > attempts + 1, timeout=5, what="failed renewals")
        assert a.is_leader and not a.lost.is_set()
        clock.advance(0.2)
        assert not a.is_leader
        kube_api.wait_for(lambda: reasons, timeout=a.retry_period + 1, what="a gives up")  # not `lost`:
        assert a.lost.is_set()  # it is set before the callbacks run
        assert reasons == [a.loss_reason] and "no renewal succeeded" in reasons[0]

        # b may take over only a full duration after it saw that record: a gave up D/3 before.
        clock.advance(DURATION - a.renew_deadline - 0.01)
        assert not b.try_acquire()
        assert lease_spec(kube_api)["holderIdentity"] == a.identity  # a left it to run out
        clock.advance(0.01)
        assert b.try_acquire()
    finally:
        a.stop()
        b.stop()


def test_each_renewal_moves_the_tenure_on_and_tells_whoever_asked(kube_api: KubeApi) -> None:
    """The driver rewrites its gate's tenure after each renewal (spark/gate.py): `valid_until` is the
    renewal's start plus the renew deadline, on the lease's clock, and 0 once the instance stops."""
    clock = Clock()
    a = leadership("a", clock=clock)
    renewals: list[float] = []
    a.on_renewed(lambda: renewals.append(a.valid_until))
    assert a.valid_until == 0.0
    assert a.try_acquire()
    try:
        assert a.valid_until == clock.now + a.renew_deadline
        clock.advance(0.5)
        moved = 1000.5 + a.renew_deadline
        kube_api.wait_for(lambda: a.valid_until == moved, timeout=5, what="a renewal")
        assert moved in renewals
    finally:
        a.stop()
    assert a.valid_until == 0.0


class Interleaved(Intercepted):
    """A store that lets another contender write first, between this one's read and its write."""

    def __init__(self, store: KubernetesLeases, before_write: Callable[[], object]) -> None:
        super().__init__(store)
        self.before_write: Callable[[], object] | None = before_write

    def before(self, write: bool) -> None:
        if write and self.before_write is not None:
            before, self.before_write = self.before_write, None
            before()


def admin(kube: KubeApi) -> Kube:
    """The API server's admin: an account that may create Leases (the bridge's own may not)."""
    with mock.patch.dict(os.environ, {"KUBECONFIG": str(kube.kubeconfig)}):
        return Kube.connect()


@pytest.mark.parametrize("lease_exists", [False, True], ids=["create", "replace"])
def test_a_race_has_one_winner(kube_api: KubeApi, lease_exists: bool) -> None:
    """Free (the operator made it, no holder): both contenders go for it at once. Absent, both create it,
    as accounts that may (in a cluster the operator creates it: `test_an_absent_lease_...`)."""
    stores = (KubernetesLeases(NAMESPACE, LEASE), KubernetesLeases(NAMESPACE, LEASE))
    if not lease_exists:
        kube_api.delete(LEASES, "Lease", LEASE, NAMESPACE)
        stores = (KubernetesLeases(NAMESPACE, LEASE, admin(kube_api)),) * 2
    b = leadership("b", stores[0])
    a = leadership("a", Interleaved(stores[1], b.try_acquire))
    try:
        assert not a.try_acquire()  # read the lease, then b wrote first: 409 for a
        assert b.is_leader and not a.is_leader
        assert lease_spec(kube_api)["holderIdentity"] == b.identity
        assert holders(kube_api)[-1] == b.identity and a.identity not in holders(kube_api)
    finally:
        a.stop()
        b.stop()


# ---------------------------------------------------------------------------------------------------
# When the election applies


def standby_config(**failover: Any) -> JobConfig:
    return config(failover={"standby": True, **failover}).model_copy(update={"namespace": NAMESPACE})


def test_local_runs_and_single_instances_run_alone() -> None:
    assert Leadership.for_job(config(failover={"standby": True}), "a") is None  # no namespace: local
    single = config().model_copy(update={"namespace": NAMESPACE})
    assert Leadership.for_job(single, "a") is None
    args = parser().parse_args(["job", "-f", "bridge.yaml", "--no-lease"])
    assert args.lease is False
    assert parser().parse_args(["job", "-f", "bridge.yaml"]).lease is True


def test_the_job_holds_the_bridge_lease_as_instance_and_pod(
    kube_api: KubeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOSTNAME", "orders-secondary-driver")
    election = Leadership.for_job(standby_config(leaseDurationSeconds=5), "secondary")
    assert election is not None
    assert election.lease == "apps/orders-jms-bridge"
    assert election.identity == "secondary/orders-secondary-driver"
    assert (election.duration_seconds, election.renew_period) == (5, 5 / 3)
    try:
        assert election.acquire()
        assert lease_spec(kube_api)["holderIdentity"] == "secondary/orders-secondary-driver"
    finally:
        election.stop()
    assert "holderIdentity" not in lease_spec(kube_api)
    lease = kube_api.get(LEASES, "Lease", LEASE, NAMESPACE) or {}
    assert lease["metadata"]["labels"] == {LABEL_BRIDGE_ID: "orders"}  # what the operator's watch selects


def test_a_lease_of_an_older_job_gets_the_label_at_its_next_write(kube_api: KubeApi) -> None:
    older = kube_api.get(LEASES, "Lease", LEASE, NAMESPACE) or {}
    kube_api.replace({**older, "metadata": {**older["metadata"], "labels": {}}})  # as an older job made it
    store = KubernetesLeases(NAMESPACE, LEASE)
    election = Leadership(store, identity("primary"), DURATION, labels={LABEL_BRIDGE_ID: "orders"})
    try:
        assert election.try_acquire()
    finally:
        election.stop()
    lease = kube_api.get(LEASES, "Lease", LEASE, NAMESPACE) or {}
    assert lease["metadata"]["labels"] == {LABEL_BRIDGE_ID: "orders"}


def test_no_cluster_is_a_hard_failure_that_names_the_switch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    with pytest.raises(BridgeStopped, match="--no-lease"):
        Leadership.for_job(standby_config(), "a")


class Forbidden:
    """A store whose service account may not touch leases."""

    namespace, name = NAMESPACE, LEASE
    error = ApiError(403, "Forbidden", f'leases.coordination.k8s.io "{LEASE}" is forbidden')

    def read(self, timeout: float) -> dict[str, Any] | None:
        raise self.error

    def create(self, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        raise self.error

    def replace(self, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        raise self.error

    def changes(self, seconds: int) -> Iterator[dict[str, Any] | None]:
        raise self.error


def test_missing_rbac_is_a_hard_failure() -> None:
    with pytest.raises(BridgeStopped, match=r"needs get and update on it .* the Lease must exist"):
        leadership("a", Forbidden()).acquire()


def test_an_absent_lease_the_job_may_not_create_is_a_hard_failure_that_says_so(kube_api: KubeApi) -> None:
    """A bridge's own account may not create Leases: the operator creates the bridge's. Without it (deleted
    by hand) the job stops, saying what is missing, instead of waiting for ever."""
    path = job_kubeconfig(
        kube_api, NAMESPACE, bridge="payments", bridge_id="payments"
    )  # another bridge: its 403 is the point
    kube_api.delete(LEASES, "Lease", lease_name("payments"), NAMESPACE)
    with mock.patch.dict(os.environ, {"KUBECONFIG": str(path)}):
        store = KubernetesLeases(NAMESPACE, lease_name("payments"), Kube.connect())
    with pytest.raises(BridgeStopped, match="the Lease must exist: the operator creates it"):
        Leadership(store, identity("a"), DURATION).acquire()
    refused = kube_api.refused("system:serviceaccount:apps:payments-job")
    assert [r.split(" ", 1)[0] for r in refused] == ["create"]


# ---------------------------------------------------------------------------------------------------
# What runs the election in a cluster


def test_the_rendered_service_account_may_hold_the_lease() -> None:
    """The SparkApplications run as the bridge's own service account, whose Role allows the election on
    the bridge's Lease alone; the chart's ClusterRole, bound beside it, grants nothing on Leases."""
    from jmsbridge_operator import naming
    from jmsbridge_operator.identity import identity as bridge_identity
    from jmsbridge_operator.render import render

    from tests.operator.helpers import CHART_DIR, bridge

    body = bridge(spark={})  # no spark.serviceAccount
    model = JmsBridge.model_validate(body)
    job = job_config(model, [])
    account = naming.job_service_account(model.metadata.name)
    for app in render(model, job).applications.values():
        assert app["spec"]["driver"]["serviceAccount"] == account
    _, role, binding, spark = bridge_identity(model, job).objects
    assert (
        binding["subjects"]
        == spark["subjects"]
        == [{"kind": "ServiceAccount", "name": account, "namespace": "apps"}]
    )
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    leases = [r for r in role["rules"] if "leases" in r["resources"]]
    assert leases == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [lease_name(job.bridge_id)],
            "verbs": ["get", "watch", "update"],
        }
    ]

    helm = shutil.which("helm")
    if helm is None:
        pytest.skip("helm is not installed (scripts/install-helm.sh installs it)")
    args = [helm, "template", "bridge", str(CHART_DIR), "-n", "ops", "--set", "watchNamespaces={apps}"]
    output = subprocess.run(args, capture_output=True, text=True, check=True, timeout=60).stdout
    documents = [d for d in yaml.safe_load_all(output) if d]
    (cluster_role,) = [d for d in documents if d["metadata"]["name"] == naming.JOB_CLUSTER_ROLE]
    assert cluster_role["kind"] == "ClusterRole" and spark["roleRef"]["kind"] == "ClusterRole"
    assert not [r for r in cluster_role["rules"] if "leases" in r["resources"]]
