"""The gate: a check that may hold a bridge's applications stopped, and say why in its status.

The reconciler asks one gate per reconciliation, after the spec and routes are validated and before any
SparkApplication is created, changed or kept: `gate(bridge, config) -> GateVerdict`.

- open: the bridge runs (applications created and updated as rendered);
- closed, hard failure (`transient=False`): its applications are deleted (like `suspend`), `Ready=False`
  with the verdict's reason and message, `Stalled=True`; they come back by themselves once the gate opens;
- closed, transient (`transient=True`, e.g. Kafka unreachable within a grace period): no application is
  created, changed or deleted, `Ready=False` and `Reconciling=True` with the verdict's reason and message.

Extra conditions (such as `KafkaReady`) are merged into the bridge's status in every case. The kafka
checks' `CheckResult` maps one to one: `open=result.ready`, `transient=result.reconciling`, reason and
message from `result.condition`, `conditions=(GateCondition(**result.condition.as_dict()),)`.

A gate must be fast and must not block: the Kafka checks run elsewhere (`handlers/checking.py`), keep
their latest verdict per bridge in their gate (`kafka_gate.KafkaGate`), and reconcile the bridge when it
changes. The gate only looks the verdict up. With the checks off (`JMSBRIDGE_KAFKA_CHECKS=false`), and for
`jmsbridge render` and `validate`, the gate is `open_gate`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Literal

from bridge_job.config import JmsBridge, JobConfig


@dataclasses.dataclass(frozen=True)
class GateCondition:
    """An extra status condition reported by a gate, e.g. `KafkaReady`."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str = ""


@dataclasses.dataclass(frozen=True)
class GateVerdict:
    open: bool = True
    reason: str = ""  # one CamelCase word, e.g. TopicNotFound; required when closed
    message: str = ""  # what is wrong and what to fix; names every affected topic
    transient: bool = False  # True: Reconciling (retrying by itself); False: Stalled (needs a person)
    conditions: tuple[GateCondition, ...] = ()

    def __post_init__(self) -> None:
        if not self.open and not self.reason:
            raise ValueError("a closed gate needs a reason")


OPEN = GateVerdict()

Gate = Callable[[JmsBridge, JobConfig], GateVerdict]


def open_gate(bridge: JmsBridge, config: JobConfig) -> GateVerdict:
    """Nothing holds a bridge back (the Kafka checks are off)."""
    return OPEN
