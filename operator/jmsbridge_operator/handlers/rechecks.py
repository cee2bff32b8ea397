"""A bridge whose status changes with time alone is reconciled when that time comes.

Some of a bridge's status changes with nothing to watch: a Lease not renewed expires, nobody holds it
for its duration, a name someone else holds is due for another look (`taken_names`); and route changes
are gathered for a moment (`Reconciler.reconcile_soon`). The reconciler
notes when (`Reconciler.is_due`); one quiet loop per bridge (a kopf daemon: no log line per round,
unlike a timer) asks it every `CHECK_SECONDS`, which costs a dictionary lookup in the event loop until a
reconciliation is due, and only then a thread.
"""

from __future__ import annotations

import asyncio
import logging

import kopf

from jmsbridge_operator.handlers.pauses import pause
from jmsbridge_operator.reconciler import Reconciler, RoutesLookup

logger = logging.getLogger("jmsbridge_operator")

# How soon a due change shows (on top of the moment it is due).
CHECK_SECONDS = 1.0


async def run(
    reconciler: Reconciler, key: tuple[str, str], routes: RoutesLookup, stopped: kopf.DaemonStopped
) -> None:
    # kopf may start a bridge's loop after it stopped the others (an event that came in as the operator
    # stopped): such a loop's `stopped` is never set, so it also ends with the operator's cleanup, else
    # kopf's shutdown gives up on it after 5 s and the operator exits 1. Its pauses run out meanwhile:
    # `pause`, not `stopped.wait(...)`, which would leave a TimeoutError for that shutdown to re-raise.
    while not stopped and not reconciler.stopping.is_set():
        await pause(stopped, CHECK_SECONDS)
        if stopped or reconciler.stopping.is_set() or not reconciler.is_due(*key):
            continue  # the usual round: a lookup in the event loop, no thread
        try:
            await asyncio.to_thread(reconciler.reconcile_if_due, *key, routes)
        except Exception as error:  # e.g. a conflict: the reconciliation stays due, the next round retries
            logger.warning("Reconciling %s/%s when due failed: %s", *key, error)
