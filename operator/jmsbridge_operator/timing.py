"""How long the operator waits: before it calls a bridge's trouble lasting (settings of the pure
decisions), and before it reconciles a bridge whose routes are still coming.

- `failure_window_seconds`: failures of an instance count as one streak while each comes within this
  long of the one before (`restarts.py`); an instance that has run this long since its last failure
  is healthy again, and its failure record is dropped from the status.
- `rollout_deadline_seconds`: a standby that has not run a new spec this long after it got it fails the
  rollout (`RolloutFailed`, `rollout.py`).
- `settle_seconds`, `gather_seconds`: a route change is reconciled once none came for `settle_seconds`,
  `gather_seconds` after the first at most, and a new bridge `gather_seconds` after its creation: the
  routes of one `kubectl apply` arrive one by one, and one reconciliation then writes them all
  (`Reconciler.reconcile_soon`).
"""

from __future__ import annotations

import dataclasses

from jmsbridge_operator.restarts import FAILURE_WINDOW_SECONDS

ROLLOUT_DEADLINE_SECONDS = 300.0
SETTLE_SECONDS = 0.5
GATHER_SECONDS = 2.0


@dataclasses.dataclass(frozen=True)
class Timing:
    failure_window_seconds: float = float(FAILURE_WINDOW_SECONDS)
    rollout_deadline_seconds: float = ROLLOUT_DEADLINE_SECONDS
    settle_seconds: float = SETTLE_SECONDS
    gather_seconds: float = GATHER_SECONDS


DEFAULT_TIMING = Timing()
