"""The raw javax.jms API through JPype, for benchmark clients that must stamp times themselves.

The project's adapter (`bridge_job.jms`) turns every message into a `JmsMessage`, which is the right
thing for the bridge and the baselines but costs a benchmark's receiver time between a message's arrival
and the moment it is stamped. Receivers and requesters therefore use the provider's objects directly:
one started connection to the local ActiveMQ, sessions and consumers made from it as JMS describes.
"""

from __future__ import annotations

from typing import Any

import jpype

from bridge_job.jms import start_jvm
from jmsbridge.local import activemq_classpath

AUTO_ACKNOWLEDGE = 1
DUPS_OK_ACKNOWLEDGE = 3  # acknowledgements sent lazily, in batches: a receiver that keeps up


def connect(url: str) -> Any:
    """A started `javax.jms.Connection` to ActiveMQ at `url`; the caller closes it."""
    start_jvm(activemq_classpath())
    factory = jpype.JClass("org.apache.activemq.ActiveMQConnectionFactory")(url)
    connection = factory.createConnection()
    connection.start()
    return connection
