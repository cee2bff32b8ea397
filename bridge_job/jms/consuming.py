"""Taking messages off one JMS source in transacted batches: the ingest half of the adapter.

Each `BatchConsumer` owns a transacted session, so a batch is exactly the messages received since the
last `commit` or `rollback`: the driver journals the batch to Kafka and commits only after Kafka has
acknowledged it; a crash or a `rollback` before that makes the provider redeliver every message of the
batch (JMSRedelivered true, same JMSMessageID). If `receive_batch` raises, roll back (or close): messages
it had already received are part of the open transaction.

Queues use a plain consumer; topics a durable subscription (JMS 1.1 `createDurableSubscriber`, which
every provider supports) named by the source, so that messages published while the bridge is down wait
for it. A durable subscription is identified by the connection's client id and its name: the
connection must have an explicit, stable client id.

A batch waits up to `max_delay_ms` for its first message. Then, by default (`linger=False`, as the ingest
takes them), it takes the messages already waiting and closes as soon as none is, at `max_messages`, or
`max_delay_ms` after its first message while they keep coming: at a trickle a message goes on at once,
under load batches grow by themselves, since messages wait while the last batch is written. A lingering
batch (`linger=True`) instead waits for more until it has `max_messages` or `max_delay_ms` has passed since
the call began.

Broker note (ActiveMQ Classic): a queue pages at most `maxPageSize` messages (default 200) towards
consumers, counting the ones delivered but not yet committed; a lingering batch larger than that only
fills up as far as the page and then waits out `max_delay_ms`. Keep batches at or below the broker's page
size or raise it in the destination policy.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import jpype

from bridge_job.config import JmsSource
from bridge_job.jms.api import JmsApi
from bridge_job.jms.errors import JavaException, JmsError, jms_error
from bridge_job.jms.mapping import MessageReader
from bridge_job.jms.sessions import SessionOwner
from bridge_job.message import Destination, DestinationKind, JmsMessage


def source_destination(source: JmsSource) -> Destination:
    if source.queue is not None:
        return Destination(DestinationKind.QUEUE, source.queue)
    assert source.topic is not None  # JmsSource validates that exactly one is set
    return Destination(DestinationKind.TOPIC, source.topic)


class BatchConsumer(SessionOwner):
    """Receives batches from one queue or durable topic subscription in its own transacted session."""

    def __init__(
        self,
        connection: Any,
        api: JmsApi,
        source: JmsSource,
        client_id: str | None,
        check_connection: Callable[[], None],
    ) -> None:
        self.destination = source_destination(source)
        self._check_connection = check_connection
        self._where = self.destination.uri()
        if source.durable_subscription is not None:
            self._where += f" (durable subscription {source.durable_subscription})"
        if source.selector is not None:
            self._where += f" with selector {source.selector!r}"
        if self.destination.kind is DestinationKind.TOPIC and client_id is None:
            raise JmsError(
                f"cannot subscribe to {self._where}: a durable subscription needs the connection's client "
                "id (set jms.clientId)"
            )
        session_class = api.type("Session")
        self._session: Any = None
        try:
            self._session = connection.createSession(True, session_class.SESSION_TRANSACTED)
            # Called through the JMS interface with typed arguments: providers add overloads
            # (ActiveMQ: one taking a MessageListener) that would make a null selector ambiguous.
            selector = jpype.JObject(source.selector, jpype.JString)
            if self.destination.kind is DestinationKind.QUEUE:
                queue = self._session.createQueue(self.destination.name)
                self._consumer = session_class.createConsumer(self._session, queue, selector)
            else:
                topic = self._session.createTopic(self.destination.name)
                self._consumer = session_class.createDurableSubscriber(
                    self._session, topic, source.durable_subscription, selector, False
                )
        except JavaException as error:
            if self._session is not None:
                self._close_quietly()
            raise jms_error(f"cannot consume from {self._where}", error) from error
        self._reader = MessageReader(api, self.destination)
        self._closed = False
        self._batch = f"the batch from {self._where}"
        self._owner = f"the consumer of {self._where}"

    def receive_batch(self, max_messages: int, max_delay_ms: int, linger: bool = False) -> list[JmsMessage]:
        """Up to `max_messages`; `[]` if none arrived within `max_delay_ms`. Without `linger`, what is
        there already once the first message came, for at most `max_delay_ms` more (no message waits for
        company); with it, what arrives within `max_delay_ms` in total."""
        if self._closed:
            raise JmsError(f"the consumer of {self._where} is closed")
        self._check_connection()
        batch: list[JmsMessage] = []
        if max_messages <= 0:
            return batch
        receive = self._consumer.receive
        read = self._reader.read
        began = time.monotonic()
        try:
            m = receive(max_delay_ms) if max_delay_ms > 0 else self._consumer.receiveNoWait()
            deadline = (began if linger else time.monotonic()) + max_delay_ms / 1000
            while m is not None:
                batch.append(read(m))
                if len(batch) >= max_messages:
                    break
                remaining_ms = int((deadline - time.monotonic()) * 1000)
                if linger and remaining_ms >= 1:
                    m = receive(remaining_ms)
                elif linger or remaining_ms > 0 or max_delay_ms == 0:
                    m = self._consumer.receiveNoWait()  # receive(0) would block forever: what is here
                else:
                    break  # open `max_delay_ms` since its first message: the rest is the next batch's
        except JavaException as error:
            self._check_connection()
            raise jms_error(f"cannot receive from {self._where}", error) from error
        return batch

    def _close_quietly(self) -> None:
        with contextlib.suppress(JavaException):
            self._session.close()

    def __enter__(self) -> BatchConsumer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
