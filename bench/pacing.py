"""Sending at a steady rate: item i goes at start + i/rate, back to back when behind."""

from __future__ import annotations

import time
from collections.abc import Iterator


def paced(count: int, rate: float) -> Iterator[int]:
    """0 .. count-1, each yielded at its time; `rate` 0 or less: at once."""
    began = time.monotonic()
    for i in range(count):
        if rate > 0:
            delay = began + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        yield i
