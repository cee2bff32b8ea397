"""The JMS adapter: the real JMS API (javax.jms or jakarta.jms) of any provider's client jars, in-process
through JPype.

Data flow: `start_jvm` (jvm.py) -> a `ConnectionFactory` from class and bean properties or JNDI
(factories.py) -> `JmsConnection` (connection.py) -> `BatchConsumer` for transacted ingest
(consuming.py) and `JmsProducer` for sending (producing.py); messages cross between Java and the
bridge's `JmsMessage` model in mapping.py. Every failure is a `JmsError` (errors.py).
"""

from bridge_job.jms.connection import JmsConnection
from bridge_job.jms.consuming import BatchConsumer
from bridge_job.jms.errors import JmsError, JmsLoginRefused, JmsRefused, JmsTlsRefused
from bridge_job.jms.jvm import detach_thread, start_jvm
from bridge_job.jms.producing import JmsProducer

__all__ = [
    "BatchConsumer",
    "JmsConnection",
    "JmsError",
    "JmsLoginRefused",
    "JmsProducer",
    "JmsRefused",
    "JmsTlsRefused",
    "detach_thread",
    "start_jvm",
]
