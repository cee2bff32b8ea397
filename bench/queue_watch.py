"""Receiving a JMS queue's messages and stamping the moment each arrives, for bench/ingress.py.

One consumer in a DUPS_OK session (acknowledgements go lazily, in batches) of a raw connection
(bench/raw_jms.py): the time is taken as `receive()` hands the message over, before anything else is
read from it, and only the three properties the benchmark needs are read: `run` and `seq` (from the
records' `jms.run` and `jms.seq` headers) and `KafkaTimestamp` (the record's timestamp, which both paths
put on the message).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.raw_jms import DUPS_OK_ACKNOWLEDGE

RECEIVE_MS = 100  # how long one receive() waits before `check` runs again


@dataclass(frozen=True, slots=True)
class Arrival:
    run: str
    seq: int
    record_timestamp_ms: int
    seen: float  # time.time() when received


@dataclass
class Collector:
    """The messages of one phase (`run` property) received from the queue."""

    run: str
    expected: int
    first_seen: dict[int, float] = field(default_factory=dict)  # seq -> wall-clock time first seen
    latencies_ms: list[float] = field(default_factory=list)
    messages: int = 0
    last_seen: float = 0.0

    def on_arrival(self, arrival: Arrival) -> bool:
        if arrival.run == self.run:
            self.messages += 1
            if arrival.seq not in self.first_seen:
                self.first_seen[arrival.seq] = arrival.seen
                self.last_seen = arrival.seen
                self.latencies_ms.append(arrival.seen * 1000 - arrival.record_timestamp_ms)
        return len(self.first_seen) >= self.expected

    @property
    def duplicates(self) -> int:
        return self.messages - len(self.first_seen)

    def first(self) -> float:
        return min(self.first_seen.values())


class QueueWatch:
    def __init__(self, connection: Any, queue: str) -> None:
        self.session = connection.createSession(False, DUPS_OK_ACKNOWLEDGE)
        self.consumer = self.session.createConsumer(self.session.createQueue(queue))

    def run(
        self, on_arrival: Callable[[Arrival], bool], timeout: float, check: Callable[[], None] = lambda: None
    ) -> bool:
        """Receive until `on_arrival` returns True (then True) or `timeout` seconds pass (then False);
        `check` runs whenever a receive comes back empty (to raise when a process the messages come
        from died)."""
        deadline = time.monotonic() + timeout
        receive = self.consumer.receive
        while time.monotonic() < deadline:
            m = receive(RECEIVE_MS)
            if m is None:
                check()
                continue
            seen = time.time()
            arrival = Arrival(
                str(m.getStringProperty("run")),
                int(str(m.getStringProperty("seq"))),
                int(m.getLongProperty("KafkaTimestamp")),
                seen,
            )
            if on_arrival(arrival):
                return True
        return False

    def close(self) -> None:
        self.session.close()
