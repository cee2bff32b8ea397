"""Failover under load: an active/standby pair of real jobs, killed and frozen while JMS messages flow.

The chaos test (tests/e2e/test_failover.py) and the benchmark (bench/failover.py) run this scenario:

- Two instances of one bridge (`jmsbridge job --instance a|b`, local Spark) share a checkpoint directory,
  as a shared volume gives them, and compete for the bridge's Lease on a real Kubernetes API server. Real
  ActiveMQ (persistent) and Apache Kafka; the route keys every record by the message's `seq`.
- A steady load (`JmsLoad`) sends persistent messages at `rate` from start to end.
- `kills` times: once the active has written `steady_records` since it took over and the standby stands by,
  and then at a random point of the active's renewal period (`_at_random_phase`), SIGKILL the active's
  whole process group and start it again at once (as Kubernetes restarts a pod): it
  comes back as the next standby. The takeover gap is the time between the CreateTime of the last record
  in the destination topic before the kill and that of the first record after it (the new active's).
- Then once more the active is frozen (SIGSTOP of its process group) until the standby has taken over
  and writes. The load pauses; every acknowledged message must reach the topic (the frozen instance's
  unacknowledged JMS messages come back once ActiveMQ drops its silent connection, after about 30 s).
  The end offsets of the journal and the destination topic are noted, the frozen instance resumes
  (SIGCONT) and must notice that it lost the lease and exit. Whatever was committed to either topic after
  those offsets is a zombie write: the new active had nothing left to write (an epoch marker of the new
  active, should its journal producer be replaced meanwhile, does not count). The load resumes until at
  least `messages` were sent.
- At the end every acknowledged message must be in the topic: `lost` counts those that are not,
  `duplicates` the records beyond one per message. A message whose journal record the egress moved past
  without writing it will not come, so no wait waits for it: the run goes on, with every check, and
  counts it lost, so the test can tell where it went.
"""

from __future__ import annotations

import datetime
import math
import os
import random
import signal
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil
from confluent_kafka import Consumer

from bridge_job.config import journal_reader_group, lease_holder_identity, lease_name
from bridge_job.formats import native
from bridge_job.formats.journal import EPOCH_HEADER
from jmsbridge.kafka_server import KafkaBroker
from jmsbridge.local import ActiveMqBroker, BridgeJob, wait_until
from testbed.apiserver.chart import job_kubeconfig
from testbed.apiserver.client import KubeApi
from testbed.harness import bridge_document, queued, route_document, write_yaml
from testbed.jms_load import JmsLoad
from testbed.topic_log import LoggedRecord, TopicLog

NAMESPACE = "apps"
LEASES = "coordination.k8s.io/v1"
STANDING_BY = "standby: waiting for lease"
MAX_UNPLANNED_EXITS = 3
PASSED_LOOK_SECONDS = 10.0  # how often a wait for missing messages asks whether the egress moved past them
SETTLE_SECONDS = 3.0  # topics unchanged this long after the zombie exited: nothing more is coming


@dataclass(frozen=True)
class FailoverPlan:
    delivery: str = "atLeastOnce"
    cold_standby: bool = False
    messages: int = 20_000  # sent at least
    rate: float = 250.0  # messages per second
    kills: int = 5
    freeze: bool = True
    lease_seconds: int = 10
    steady_records: int = 1000  # written by an active before it is killed or frozen
    # How long the standby has stood by before a failure. The standby counts the lease duration from when it
    # first saw the holder's last record: one that has just come up takes over a full duration after its
    # first look, one that has watched the holder renew for a while up to D/3 sooner. A bridge's standby
    # has usually stood by for hours: the benchmark's gaps wait one lease duration; 0 fails at once.
    standby_settled_s: float = 0.0
    trigger_ms: int | None = 100  # None: the bridge's default
    master: str = "local[8]"  # real-time mode runs a task per partition side by side
    timeout: float = 300.0  # for each wait


@dataclass(frozen=True)
class Takeover:
    how: str  # "kill" or "freeze"
    gap_s: float  # the former active's last record -> the new active's first, by their CreateTime
    after_signal_s: float  # the signal -> the new active's first record
    lease_after_s: float  # the signal -> the new tenure's acquireTime (the rest is the new active's start)


@dataclass
class Zombie:
    exit_code: int
    journal_writes: int
    output_writes: int
    output_new_messages: list[int]  # seqs a zombie write brought that the topic did not hold before


@dataclass
class Outcome:
    plan: FailoverPlan
    acknowledged: int = 0
    received: int = 0
    lost: list[int] = field(default_factory=list)
    duplicates: int = 0
    takeovers: list[Takeover] = field(default_factory=list)
    zombie: Zombie | None = None
    epoch_markers: int = 0
    unplanned_exits: list[str] = field(default_factory=list)  # instances that failed and were restarted
    where_lost: dict[str, int] = field(default_factory=dict)  # of the lost: in the journal, on the broker

    def gaps(self, how: str = "kill") -> list[float]:
        return [t.gap_s for t in self.takeovers if t.how == how]

    def figures(self) -> dict[str, Any]:
        gaps = self.gaps()
        return {
            "standby": "cold" if self.plan.cold_standby else "warm",
            "acknowledged": self.acknowledged,
            "received": self.received,
            "lost": len(self.lost),
            "duplicates": self.duplicates,
            "kills": len(gaps),
            "gap_p50_s": round(statistics.median(gaps), 2) if gaps else None,
            "gap_max_s": round(max(gaps), 2) if gaps else None,
            "gaps_s": [round(g, 2) for g in gaps],
            "kill_to_first_record_s": [round(t.after_signal_s, 2) for t in self.takeovers if t.how == "kill"],
            "kill_to_lease_s": [round(t.lease_after_s, 2) for t in self.takeovers if t.how == "kill"],
            "freeze_gap_s": next((round(g, 2) for g in self.gaps("freeze")), None),
            "zombie": asdict(self.zombie) if self.zombie is not None else None,
            "epoch_markers": self.epoch_markers,
            "unplanned_exits": self.unplanned_exits,
            "where_lost": self.where_lost,
        }


def micro_time_ms(text: str) -> int:
    """A Kubernetes MicroTime (the Lease's acquireTime) as epoch milliseconds."""
    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(moment.timestamp() * 1000)


def seq(record: LoggedRecord) -> int:
    return int(record.key or b"-1")


def journal_seq(record: LoggedRecord) -> int | None:
    """The `seq` property of a journal record's message (None for an epoch marker)."""
    value = record.header(f"{native.PREFIX}seq")
    return int(value) if value is not None else None


class Instance:
    """One instance of the pair: a job process, restarted as Kubernetes restarts a pod."""

    def __init__(
        self, name: str, files: list[Path], work: Path, plan: FailoverPlan, kube: KubeApi, bridge: str
    ) -> None:
        self.name = name
        self.identity = lease_holder_identity(name, f"pod-{name}")
        # as the bridge's own pods (the operator's identity.py); the bridge's id is its name (`_files`)
        kubeconfig = job_kubeconfig(kube, NAMESPACE, bridge=bridge, bridge_id=bridge)
        env = {"HOSTNAME": f"pod-{name}", "KUBECONFIG": str(kubeconfig)}
        args = ["--cold-standby"] if plan.cold_standby else []
        self.job = BridgeJob(files, work, instance=name, master=plan.master, env=env, args=args)

    @property
    def pid(self) -> int:
        assert self.job.process is not None
        return self.job.process.pid

    def exited(self) -> int | None:
        """Its exit status, or None while it runs."""
        process = self.job.process
        return None if process is None else process.poll()

    def stop_line(self) -> str:
        """Its last `jmsbridge stopped:` line, else the last line of its log."""
        lines = self.job.log().splitlines() or [""]
        return next((line for line in reversed(lines) if "jmsbridge stopped:" in line), lines[-1])

    def signal_group(self, signum: signal.Signals) -> None:
        os.killpg(self.pid, signum)

    def stop(self) -> None:
        process = self.job.process
        if process is not None and process.poll() is None:
            self.signal_group(signal.SIGCONT)  # a frozen process cannot handle SIGTERM
        self.job.stop()

    def group_gone(self) -> bool:
        return group_gone(self.pid)


def group_gone(group: int) -> bool:
    """No live process is left in the process group (Spark's JVM, Python workers, planning processes)."""
    for process in psutil.process_iter(["status"]):
        try:
            if os.getpgid(process.pid) == group and process.info["status"] != psutil.STATUS_ZOMBIE:
                return False
        except (ProcessLookupError, psutil.Error):
            continue
    return True


class Failover:
    def __init__(
        self,
        plan: FailoverPlan,
        activemq: ActiveMqBroker,
        kafka: KafkaBroker,
        kube: KubeApi,
        work: Path,
        note: Callable[[str], None] = lambda text: None,
    ) -> None:
        self.plan = plan
        self.activemq, self.kafka, self.kube = activemq, kafka, kube
        self.note = note
        n = uuid.uuid4().hex[:8]
        self.bridge_id, self.queue, self.topic = f"failover-{n}", f"failover.{n}", f"failover-{n}"
        work = work / self.bridge_id
        work.mkdir(parents=True)
        files = self._files(work)
        self.active = Instance("a", files, work, plan, kube, self.bridge_id)
        self.standby = Instance("b", files, work, plan, kube, self.bridge_id)
        self.load = JmsLoad(activemq, self.queue, plan.rate)
        self.output = TopicLog(kafka.bootstrap, self.topic)
        self.journal: TopicLog | None = None  # the job creates the journal topic
        self.outcome = Outcome(plan)
        self.tenure_start = 0  # the topic's end offset when the current active took over
        self.zombie: Instance | None = None  # once frozen: not restarted when it exits
        self.passed: set[int] = set()  # missing messages whose journal records the egress moved past
        self.looked = 0.0  # when the egress's committed offset was last read for them

    def _files(self, work: Path) -> list[Path]:
        plan = self.plan
        self.kafka.create_topics(self.topic)
        spec: dict[str, Any] = {"delivery": plan.delivery}
        bridge = bridge_document(self.bridge_id, self.activemq, self.kafka, [{"queue": self.queue}], **spec)
        bridge["spec"]["failover"] = {"standby": True, "leaseDurationSeconds": plan.lease_seconds}
        bridge["spec"]["bridgeId"] = self.bridge_id  # its Lease, journal and group: named here, not defaulted
        bridge["spec"]["spark"].pop("triggerIntervalMs")
        if plan.trigger_ms is not None:
            bridge["spec"]["spark"]["triggerIntervalMs"] = plan.trigger_ms
        route = route_document("all", self.bridge_id, self.topic, key={"property": "seq"})
        for document in (bridge, route):
            document["metadata"]["namespace"] = NAMESPACE
        return [write_yaml(work / "bridge.yaml", bridge), write_yaml(work / "routes.yaml", route)]

    def run(self) -> Outcome:
        try:
            self._start()
            for kill in range(1, self.plan.kills + 1):
                self._kill(kill)
            if self.plan.freeze:
                self._freeze()
            self.load.finish(self.plan.messages, self.plan.timeout + self.plan.messages / self.plan.rate)
            self._count()
        finally:
            self.load.stop()
            for instance in (self.active, self.standby):
                instance.stop()
            if self.outcome.lost:
                self._locate_lost()
            self.output.close()
            if self.journal is not None:
                self.journal.close()
        return self.outcome

    # --- the steps ---

    def _start(self) -> None:
        self.active.job.start()
        self.active.job.wait_log("active: holding lease", self.plan.timeout)
        self.standby.job.start()  # while the active starts its queries: they both take a while
        self.active.job.wait_running(self.plan.timeout)
        self.standby.job.wait_log(STANDING_BY, self.plan.timeout)
        self.journal = TopicLog(self.kafka.bootstrap, f"{self.bridge_id}.jms-bridge.journal")
        self.note(f"{self.bridge_id}: {self.active.identity} active, {self.standby.identity} standing by")
        self.load.start()

    def _steady(self, since: int) -> None:
        """Until the active has caught up (every message acknowledged so far is in the topic, or will not
        come) and written `steady_records` since `since`, and the standby stands by: a failure in the
        steady state."""
        acknowledged = set(self.load.acknowledged)
        state: dict[str, Any] = {}

        def ready() -> bool:
            self._supervise()
            state["missing"] = sorted(self._coming(acknowledged))
            state["written"] = len(self.output.since(since))
            state["standing_by"] = STANDING_BY in self.standby.job.log()
            if state["standing_by"]:
                state.setdefault("standing_since", time.monotonic())
            settled = time.monotonic() - state.get("standing_since", math.inf) >= self.plan.standby_settled_s
            enough = state["written"] >= self.plan.steady_records
            return enough and not state["missing"] and settled

        try:
            wait_until(ready, self.plan.timeout, f"{self.plan.steady_records} records and a standby", 0.5)
        except TimeoutError as error:
            missing = self.outcome.lost = state.get("missing", [])  # located once the instances stopped
            raise AssertionError(
                f"{error}: {state.get('written')} records written since the takeover, "
                f"{len(missing)} acknowledged messages missing {missing[:10]}, the standby "
                f"{'stands by' if state.get('standing_by') else 'does not stand by'}"
            ) from None

    def _at_random_phase(self) -> None:
        """Wait a random part of the holder's renewal period (D/3). The Lease comes D after the last
        renewal before a failure, so 2D/3 to D after it, by where in that period it falls. A crash falls
        anywhere; the scenario's own steps do not: the failure came once the restarted standby stood by,
        which takes about as long each time, and so at about the same point of the period each time (the
        Lease 9.0 s after the kill on average over 20 kills, against the 8.33 s of a uniform point)."""
        time.sleep(random.uniform(0.0, self.plan.lease_seconds / 3))

    def _kill(self, kill: int) -> None:
        self._steady(self.tenure_start)
        self._at_random_phase()
        tenure = self.lease().get("acquireTime")
        self.active.job.kill()
        killed = time.time()
        mark = self.output.high_watermark()
        self.active.job.start()  # back as the next standby, as Kubernetes restarts the pod
        self._take_over("kill", tenure, mark, killed)
        self.note(f"kill {kill}: gap {self.outcome.takeovers[-1].gap_s:.1f} s")

    def _freeze(self) -> None:
        self._steady(self.tenure_start)
        self._at_random_phase()
        zombie = self.zombie = self.active
        tenure = self.lease().get("acquireTime")
        zombie.signal_group(signal.SIGSTOP)
        frozen = time.time()
        self._take_over("freeze", tenure, self.output.high_watermark(), frozen)
        self.load.pause()
        self._all_in()
        assert self.journal is not None
        output_mark, journal_mark = self.output.high_watermark(), self.journal.high_watermark()
        before = {seq(r) for r in self.output.records}
        zombie.signal_group(signal.SIGCONT)
        exit_code = zombie.job.wait_exit(self.plan.timeout)
        wait_until(zombie.group_gone, self.plan.timeout, "the zombie's processes to end", 0.2)
        self._settle()
        written = self.output.since(output_mark)
        # Anything but a marker of another instance (a journal producer replaced): the zombie's, or
        # written for it (its records after a marker of the new active would mean the fencing failed).
        others = {self.active.identity.encode()}
        journalled = [r for r in self.journal.since(journal_mark) if r.header(EPOCH_HEADER) not in others]
        self.outcome.zombie = Zombie(
            exit_code=exit_code,
            journal_writes=len(journalled),
            output_writes=len(written),
            output_new_messages=sorted({seq(r) for r in written} - before),
        )
        self.note(f"zombie: {self.outcome.zombie}")
        self.load.resume()

    def _settle(self) -> None:
        """Until neither topic nor how far they were read has changed for SETTLE_SECONDS (everything in
        flight has landed and was read)."""
        assert self.journal is not None
        logs = (self.output, self.journal)
        last: list[Any] = [None, 0.0]

        def settled() -> bool:
            for log in logs:
                log.catch_up()
            state = [(log.high_watermark(), log.position) for log in logs]
            if state != last[0]:
                last[:] = [state, time.monotonic()]
            return bool(time.monotonic() - last[1] >= SETTLE_SECONDS)

        wait_until(settled, self.plan.timeout, "the topics to settle", 0.5)

    def _take_over(self, how: str, tenure: str | None, mark: int, signalled: float) -> None:
        """Until another tenure of the lease began (after `tenure`) and the topic has a record from
        `mark` on; its holder is the active from then on (the standby, unless that one failed)."""

        def first_record() -> tuple[LoggedRecord, str, int] | None:
            self._supervise()
            self.output.catch_up()
            spec = self.lease()
            holder, acquired = spec.get("holderIdentity"), spec.get("acquireTime")
            if holder is None or acquired is None or acquired == tenure:
                return None
            # The new active's first record: one written once it held the lease. Records of the former
            # active may land after `mark` (sent before the signal, taken by the broker after it).
            taken_ms = micro_time_ms(acquired)
            written = [r for r in self.output.since(mark) if r.timestamp_ms >= taken_ms]
            return (written[0], holder, taken_ms) if written else None

        first, holder, taken_ms = self.kube.wait_for(first_record, self.plan.timeout, f"a takeover ({how})")
        last = self.output.last_before(first.offset)
        gap = (first.timestamp_ms - last.timestamp_ms) / 1000 if last is not None else float("nan")
        after = first.timestamp_ms / 1000 - signalled
        self.outcome.takeovers.append(Takeover(how, gap, after, taken_ms / 1000 - signalled))
        if self.active.identity == holder:  # the standby failed, and the killed one came back first
            self.note(f"{how}: the restarted {holder} took over")
        else:
            self.active, self.standby = self.standby, self.active
        self.tenure_start = mark

    def lease(self) -> dict[str, Any]:
        lease = self.kube.get(LEASES, "Lease", lease_name(self.bridge_id), NAMESPACE)
        spec: dict[str, Any] = (lease or {}).get("spec") or {}
        return spec

    def _supervise(self) -> None:
        """Start again an instance that exited unasked, as Kubernetes restarts a failed pod (the exits are
        reported); fail on a crash loop, or when the load failed."""
        self.load.check()
        for instance in (self.active, self.standby):
            code = instance.exited()
            if code is None or instance is self.zombie:
                continue
            failure = f"{instance.name} exited with {code}: {instance.stop_line()}"
            self.outcome.unplanned_exits.append(failure)
            self.note(f"unplanned exit, restarted: {failure}")
            if len(self.outcome.unplanned_exits) > MAX_UNPLANNED_EXITS:
                tail = instance.job.log()[-4000:]
                raise AssertionError(f"a crash loop: {self.outcome.unplanned_exits}\n{tail}")
            instance.job.start()

    def _all_in(self) -> None:
        """Until every acknowledged message is in the topic, or will not come (`_coming`), or the timeout
        passed (then some are lost)."""
        acknowledged = set(self.load.acknowledged)

        def all_in() -> bool:
            self._supervise()
            return not self._coming(acknowledged)

        try:
            wait_until(all_in, self.plan.timeout, "every acknowledged message in the topic", 0.5)
        except TimeoutError:
            self.note(f"not every acknowledged message arrived within {self.plan.timeout:.0f} s")

    def _coming(self, acknowledged: set[int]) -> set[int]:
        """Which of `acknowledged` are not in the topic yet but may still come: not those whose journal
        records the egress moved past (asked every PASSED_LOOK_SECONDS). Those are lost, whatever the
        scenario does next, so no wait waits for them; `_count` finds them missing at the end."""
        self.output.catch_up()
        missing = acknowledged - {seq(r) for r in self.output.records} - self.passed
        if missing and time.monotonic() - self.looked >= PASSED_LOOK_SECONDS:
            self.looked = time.monotonic()
            passed = self._passed_by_the_egress(missing)
            self.output.catch_up()  # what the egress wrote before it committed that offset is in by now
            passed -= {seq(r) for r in self.output.records}
            if passed:
                self.note(f"the egress moved past the journal records of {len(passed)} missing messages")
                self.passed |= passed
                missing -= passed
        return missing

    def _passed_by_the_egress(self, missing: set[int]) -> set[int]:
        """Which of `missing` are in the journal before the offset its reader group committed: records the
        egress moved past and will not read again."""
        if self.journal is None:
            return set()
        self.journal.catch_up()
        group = Consumer(
            {"bootstrap.servers": self.kafka.bootstrap, "group.id": journal_reader_group(self.bridge_id)}
        )
        try:
            (committed,) = group.committed([self.journal.partition], timeout=10)
        finally:
            group.close()
        return {
            s
            for r in self.journal.records
            if r.offset < committed.offset and (s := journal_seq(r)) in missing
        }

    def _locate_lost(self) -> None:
        """Where the lost messages are, once both instances stopped: in the journal (an egress failure),
        still on the queue (an ingest that stalled), in ActiveMQ.DLQ (a client's poison acknowledgement),
        or none of these (dropped between JMS and the journal)."""
        lost = set(self.outcome.lost)
        journalled: set[int] = set()
        if self.journal is not None:
            self.journal.catch_up()
            journalled = {s for r in self.journal.records if (s := journal_seq(r)) in lost}

        def seqs(queue: str) -> set[int]:
            return {int(m.properties["seq"].value) for m in queued(self.activemq, queue, 0.5)}

        self.outcome.where_lost = {
            "in_journal": len(journalled),
            "on_broker": len(lost & seqs(self.queue)),
            "dead_lettered_by_the_broker": len(lost & seqs("ActiveMQ.DLQ")),
        }
        self.note(f"lost: {self.outcome.where_lost}")

    def _count(self) -> None:
        self._all_in()
        acknowledged = set(self.load.acknowledged)
        self._settle()
        seqs = Counter(seq(r) for r in self.output.records)
        assert self.journal is not None
        self.outcome.acknowledged = len(acknowledged)
        self.outcome.received = len(self.output.records)
        self.outcome.lost = sorted(acknowledged - set(seqs))
        self.outcome.duplicates = sum(count - 1 for count in seqs.values())
        self.outcome.epoch_markers = sum(
            1 for r in self.journal.records if r.header(EPOCH_HEADER) is not None
        )
