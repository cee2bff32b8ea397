"""Loop marks: what the ingress stamps on a message it sends to JMS, so that the egress never sends it back.

The origin header on Kafka records (formats/native.py, ORIGIN_HEADER) does the same in the other direction.
"""

from __future__ import annotations

# What the ingress marks a message it sends with: this bridge, and the topic the record was read from.
ORIGIN_PROPERTY = "JmsBridgeOrigin"


KAFKA_TOPIC_PROPERTY = "KafkaTopic"


# The NATS subject a message from NATS was published on (natsToJms).
NATS_SUBJECT_PROPERTY = "NatsSubject"
