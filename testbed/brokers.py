"""The local brokers the tests use (they live in `jmsbridge.local`, shared with the demo and benchmarks)."""

from jmsbridge.kafka_server import KafkaBroker
from jmsbridge.local import (
    ACTIVEMQ_HOME,
    ActiveMqBroker,
    NatsServer,
    activemq_classpath,
    free_port,
    port_open,
    wait_until,
)

__all__ = [
    "ACTIVEMQ_HOME",
    "ActiveMqBroker",
    "KafkaBroker",
    "NatsServer",
    "activemq_classpath",
    "free_port",
    "port_open",
    "wait_until",
]
