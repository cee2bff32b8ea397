"""A steady JMS load in a thread: persistent messages at a fixed rate, which the caller can pause.

Message i carries the int property `seq` = i and goes at its time on the pace (back to back when behind);
a pause stops the pace, and it starts again from the moment of `resume()`. `acknowledged` holds the
`seq` of every message whose send ActiveMQ acknowledged (a synchronous persistent send returns once the
broker stored it): those are the messages the bridge must not lose.
"""

from __future__ import annotations

import threading
import time

from bridge_job.jms import detach_thread
from bridge_job.message import Destination, DestinationKind, JmsMessage, Property
from jmsbridge.local import ActiveMqBroker, jms_connection

BODY_BYTES = 256


class JmsLoad:
    def __init__(self, activemq: ActiveMqBroker, queue: str, rate: float) -> None:
        self.activemq = activemq
        self.destination = Destination(DestinationKind.QUEUE, queue)
        self.rate = rate
        self.acknowledged: list[int] = []
        self.error: BaseException | None = None
        self._running = threading.Event()  # clear: paused
        self._stopping = threading.Event()
        self._limit: int | None = None
        self._sending = threading.Lock()  # held while a message is on its way
        self._thread = threading.Thread(target=self._send, name="jms-load", daemon=True)

    def start(self) -> JmsLoad:
        self._running.set()
        self._thread.start()
        return self

    def pause(self) -> None:
        """Stop sending; returns once no send is under way."""
        self._running.clear()
        with self._sending:
            pass

    def resume(self) -> None:
        self._running.set()

    def finish(self, at_least: int, timeout: float) -> None:
        """Send until `at_least` messages are acknowledged, then stop."""
        self._limit = at_least
        self._running.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError(f"the JMS load sent only {len(self.acknowledged)} of {at_least} in time")
        self.check()

    def stop(self) -> None:
        self._stopping.set()
        self._running.set()
        self._thread.join(60)

    def check(self) -> None:
        if self.error is not None:
            raise AssertionError(f"the JMS load failed: {self.error!r}") from self.error

    def _send(self) -> None:
        try:
            with jms_connection(self.activemq) as connection, connection.producer() as producer:
                seq, began, base = 0, time.monotonic(), 0
                while not self._stopping.is_set() and (self._limit is None or seq < self._limit):
                    if not self._running.is_set():
                        self._running.wait()
                        began, base = time.monotonic(), seq  # the pace starts again from here
                        continue
                    delay = began + (seq - base) / self.rate - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    with self._sending:
                        if not self._running.is_set():
                            continue
                        body = f"{seq:08d}".ljust(BODY_BYTES, ".")
                        message = JmsMessage(
                            self.destination, body=body, properties={"seq": Property.of(seq)}
                        )
                        producer.send(message)
                        self.acknowledged.append(seq)
                    seq += 1
        except BaseException as error:  # reported by the caller (check)
            self.error = error
        finally:
            detach_thread()  # else the JVM's shutdown waits for this thread at exit
