"""The gate: each bridge's latest Kafka check, as the verdict the reconciler asks for.

The reconciler asks the gate once per reconciliation, after the spec and routes are validated and before
any SparkApplication is created, changed or kept: `gate(bridge, config) -> GateVerdict`.

- open: the bridge runs (applications created and updated as rendered);
- closed, hard failure (`transient=False`): its applications are deleted (like `suspend`), `Ready=False`
  with the verdict's reason and message, `Stalled=True`; they come back by themselves once the gate opens;
- closed, transient (`transient=True`, e.g. Kafka unreachable within a grace period): no application is
  created, changed or deleted, `Ready=False` and `Reconciling=True` with the verdict's reason and message.

The verdict's conditions (`KafkaReady`) are merged into the bridge's status in every case. With the checks
off (`JMSBRIDGE_KAFKA_CHECKS=false`), and for `jmsbridge render` and `validate`, the gate is `open_gate`.

A Kafka check probes a cluster and can take seconds (its deadline is 15 s), so it never runs inside a
reconciliation. Each bridge has a kopf daemon of its own (`handlers/kafka_checks.py`) that checks and records
the outcome in the `KafkaGate`; the gate only looks it up:

- checked and ready: open, with `KafkaReady=True`;
- checked, hard failure: closed (the applications are stopped, `Stalled`), `KafkaReady=False`;
- checked, unreachable within the grace period: closed and transient (nothing is started, changed or
  stopped; `Reconciling`), `KafkaReady=Unknown`;
- not checked yet *for what the bridge now needs* (a new bridge, an operator restart, a new route's
  topic, other Kafka settings): closed and transient with reason `CheckingKafka`, and the bridge's
  schedule is woken to check at once. So no SparkApplication is created or changed before its check.

What a check covers is its `Subject`: the bridge's Kafka settings plus what it needs there (topics,
operations, groups, transactional ids, from `evaluation.required_access`). A verdict counts only for the
subject it was found for; a change elsewhere in the bridge (Spark sizing, say) reuses it.

Everything is kept in memory. An operator restart forgets it: each bridge is checked again before its
applications are changed (running ones keep running meanwhile), and the grace period of an unreachable
cluster starts over.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

from bridge_job.config import JmsBridge, JobConfig
from jmsbridge_operator.condition_catalogue import CHECKING_KAFKA, KAFKA_READY
from jmsbridge_operator.conditions import Condition
from jmsbridge_operator.kafka_checks.evaluation import (
    CheckResult,
    CheckState,
    RequiredAccess,
    required_access,
)


@dataclasses.dataclass(frozen=True)
class GateVerdict:
    open: bool = True
    reason: str = ""  # one CamelCase word, e.g. TopicNotFound; required when closed
    message: str = ""  # what is wrong and what to fix; names every affected topic
    transient: bool = False  # True: Reconciling (retrying by itself); False: Stalled (needs a person)
    conditions: tuple[Condition, ...] = ()  # for the bridge's status, e.g. `KafkaReady`

    def __post_init__(self) -> None:
        if not self.open and not self.reason:
            raise ValueError("a closed gate needs a reason")


OPEN = GateVerdict()

Gate = Callable[[JmsBridge, JobConfig], GateVerdict]


def open_gate(bridge: JmsBridge, config: JobConfig) -> GateVerdict:
    """Nothing holds a bridge back (the Kafka checks are off)."""
    return OPEN


Key = tuple[str, str]  # (namespace, bridge name)


@dataclasses.dataclass(frozen=True)
class Subject:
    """What one check covers: the Kafka settings (as JSON) and everything the bridge needs there."""

    kafka: str
    access: RequiredAccess

    @classmethod
    def of(cls, config: JobConfig) -> Subject:
        return cls(config.bridge.kafka.model_dump_json(), required_access(config))


def verdict_of(result: CheckResult) -> GateVerdict:
    """A check's result as the gate's verdict (the `KafkaReady` condition rides along)."""
    condition = result.condition
    extra = (condition,)
    if result.ready:
        return GateVerdict(conditions=extra)
    return GateVerdict(
        open=False,
        reason=condition.reason,
        message=condition.message,
        transient=result.reconciling,
        conditions=extra,
    )


def held(reason: str, message: str) -> GateVerdict:
    """A hard failure found before the cluster could be asked (e.g. the credentials are missing)."""
    return GateVerdict(
        open=False,
        reason=reason,
        message=message,
        conditions=(Condition(KAFKA_READY, "False", reason, message),),
    )


def checking(config: JobConfig) -> GateVerdict:
    message = (
        f"Checking Kafka at {config.bridge.kafka.bootstrap_servers} (topics, consumer groups, "
        "permissions) before the applications are started or changed"
    )
    return GateVerdict(
        open=False,
        reason=CHECKING_KAFKA,
        message=message,
        transient=True,
        conditions=(Condition(KAFKA_READY, "Unknown", CHECKING_KAFKA, message),),
    )


@dataclasses.dataclass
class _Bridge:
    wanted: JobConfig | None = None  # the config of the latest reconciliation: what to check next
    checked: Subject | None = None
    verdict: GateVerdict | None = None  # found for `checked`
    state: CheckState | None = None  # carried from check to check (the unreachable clock)
    wake: Callable[[], None] | None = None  # wakes the bridge's schedule; callable from any thread


class KafkaGate:
    """The gate over the latest checks (thread-safe: asked from handler threads, fed from kopf's loop)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._bridges: dict[Key, _Bridge] = {}

    def __call__(self, bridge: JmsBridge, config: JobConfig) -> GateVerdict:
        key = (bridge.metadata.namespace or "", bridge.metadata.name)
        subject = Subject.of(config)
        with self._guard:
            entry = self._bridges.setdefault(key, _Bridge())
            entry.wanted = config
            if entry.checked == subject and entry.verdict is not None:
                return entry.verdict
            wake = entry.wake
        if wake is not None:
            wake()
        return checking(config)

    # -- for the bridge's schedule ----------------------------------------------------------------------

    def subscribe(self, key: Key, wake: Callable[[], None]) -> None:
        with self._guard:
            self._bridges.setdefault(key, _Bridge()).wake = wake

    def forget(self, key: Key) -> None:
        """The bridge is gone (or the operator stops): nothing of it is kept."""
        with self._guard:
            self._bridges.pop(key, None)

    def wanted(self, key: Key) -> JobConfig | None:
        """What the latest reconciliation asked to be checked (None before the first one)."""
        with self._guard:
            entry = self._bridges.get(key)
            return entry.wanted if entry is not None else None

    def state(self, key: Key, config: JobConfig) -> CheckState | None:
        """The state to carry into the next check of `config` (none when its Kafka settings changed)."""
        with self._guard:
            entry = self._bridges.get(key)
            if entry is None or entry.checked is None:
                return None
            same_cluster = entry.checked.kafka == config.bridge.kafka.model_dump_json()
            return entry.state if same_cluster else None

    def record(self, key: Key, config: JobConfig, verdict: GateVerdict, state: CheckState | None) -> bool:
        """Keep what a check of `config` found; True when the bridge should be reconciled for it."""
        subject = Subject.of(config)
        with self._guard:
            entry = self._bridges.setdefault(key, _Bridge())
            changed = entry.checked != subject or entry.verdict != verdict
            entry.checked, entry.verdict, entry.state = subject, verdict, state
            return changed
