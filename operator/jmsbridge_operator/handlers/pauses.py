"""A daemon's pause that leaves no failed task behind for kopf's shutdown to re-raise.

`await stopped.wait(seconds)` waits in a task of kopf's own that ends with a TimeoutError when the time is
up (the daemon never sees it). kopf's shutdown waits up to 5 s for the tasks still around after its root
tasks and re-raises any error they ended with: a daemon kopf started as it stopped (an event in flight),
whose `stopped` is never set, thus made a clean stop exit 1. Here the deadline is ours: the inner task is
cancelled when it passes, and kopf ignores cancellations.
"""

from __future__ import annotations

import asyncio
import contextlib

import kopf


async def pause(stopped: kopf.DaemonStopped, seconds: float | None) -> None:
    """Sleep `seconds` (None: without limit) or until `stopped` is set, whichever comes first."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await stopped.wait()
