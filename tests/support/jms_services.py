"""A JMS service as JMS applications write it (ActiveMQ's client through JPype), of either convention."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import jpype

from bridge_job.jms import start_jvm
from jmsbridge.local import JmsBroker
from testbed.brokers import ActiveMqBroker, activemq_classpath


def answer_requests(
    activemq: JmsBroker,
    queue: str,
    count: int,
    by_message_id: bool = False,
    before_answering: Callable[[], None] = lambda: None,
) -> list[str]:
    """Answers `count` requests on `queue` with `re: <text>` to their JMSReplyTo, its JMSCorrelationID the
    request's JMSCorrelationID, or its JMSMessageID (`by_message_id`); returns the requests' JMSMessageIDs.
    `before_answering` runs once all requests are taken (a kill of the bridge between request and answer)."""
    start_jvm(activemq_classpath())
    factory = jpype.JClass("org.apache.activemq.ActiveMQConnectionFactory")(activemq.url)
    connection = factory.createConnection(*(activemq.credentials() or ()))
    answered = []
    try:
        connection.start()
        session = connection.createSession(False, jpype.JClass("javax.jms.Session").AUTO_ACKNOWLEDGE)
        consumer = session.createConsumer(session.createQueue(queue))
        producer = session.createProducer(None)
        requests = []
        for _ in range(count):
            request = consumer.receive(120_000)
            assert request is not None, f"no request on {queue} within 120 s"
            requests.append(request)
        before_answering()
        for request in requests:
            answer = session.createTextMessage(f"re: {request.getText()}")
            message_id = str(request.getJMSMessageID())
            answer.setJMSCorrelationID(message_id if by_message_id else request.getJMSCorrelationID())
            producer.send(request.getJMSReplyTo(), answer)
            answered.append(message_id)
    finally:
        connection.close()
    return answered


@contextmanager
def serving(activemq: ActiveMqBroker, queue: str) -> Iterator[None]:
    """A JMS service on `queue` until the block ends: it answers each request with `re: <text>` and the
    request's properties, to its JMSReplyTo, with JMSCorrelationID the request's JMSCorrelationID, or its
    JMSMessageID when the request carries the property `convention=messageId`."""
    start_jvm(activemq_classpath())
    factory = jpype.JClass("org.apache.activemq.ActiveMQConnectionFactory")(activemq.url)
    connection = factory.createConnection()
    connection.start()
    stop = threading.Event()

    def serve() -> None:
        session = connection.createSession(False, jpype.JClass("javax.jms.Session").AUTO_ACKNOWLEDGE)
        consumer = session.createConsumer(session.createQueue(queue))
        producer = session.createProducer(None)
        while not stop.is_set():
            request = consumer.receive(100)
            if request is None:
                continue
            answer = session.createTextMessage(f"re: {request.getText()}")
            for name in [str(n) for n in list(request.getPropertyNames()) if not str(n).startswith("JMSX")]:
                answer.setObjectProperty(name, request.getObjectProperty(name))
            by_id = request.getStringProperty("convention") == "messageId"
            answer.setJMSCorrelationID(request.getJMSMessageID() if by_id else request.getJMSCorrelationID())
            producer.send(request.getJMSReplyTo(), answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(30)
        connection.close()


class Held:
    """A request taken off its queue and not answered yet."""

    def __init__(self, session: Any, request: Any) -> None:
        self.session, self.request = session, request
        self.refused: str | None = None  # why the broker refused the answer, if it did

    def answer(self) -> None:
        """Answer now, as the service would have; a requester gone with its queue makes the broker refuse."""
        producer = self.session.createProducer(None)
        answer = self.session.createTextMessage(f"re: {self.request.getText()}")
        answer.setJMSCorrelationID(self.request.getJMSCorrelationID())
        try:
            producer.send(self.request.getJMSReplyTo(), answer)
        except jpype.JException as error:
            self.refused = str(error)


@contextmanager
def holding(activemq: ActiveMqBroker, queue: str, timeout_ms: int = 60_000) -> Iterator[Held]:
    """A JMS service that takes the next request on `queue` and answers only when told."""
    start_jvm(activemq_classpath())
    factory = jpype.JClass("org.apache.activemq.ActiveMQConnectionFactory")(activemq.url)
    connection = factory.createConnection()
    connection.start()
    try:
        session = connection.createSession(False, jpype.JClass("javax.jms.Session").AUTO_ACKNOWLEDGE)
        request = session.createConsumer(session.createQueue(queue)).receive(timeout_ms)
        assert request is not None, f"no request on {queue} within {timeout_ms} ms"
        yield Held(session, request)
    finally:
        connection.close()
