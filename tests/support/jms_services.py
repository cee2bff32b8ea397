"""A JMS service as JMS applications write it (ActiveMQ's client through JPype), of either convention."""

from __future__ import annotations

from collections.abc import Callable

import jpype

from bridge_job.jms import start_jvm
from tests.brokers import ActiveMqBroker, activemq_classpath


def answer_requests(
    activemq: ActiveMqBroker,
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
    connection = factory.createConnection()
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
