"""Job configs for the Kafka check tests: one bridge with the topics a test names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bridge_job.config import JobConfig


def bridge_config(
    bootstrap: str = "127.0.0.1:9092",
    *,
    bridge_id: str = "orders",
    writes: Sequence[str] = ("orders",),
    reads: Sequence[str] = (),
    dead_letter: str | None = None,
    journal: str | None = None,
    create_journal: bool = False,
    journal_partitions: int = 1,
    exactly_once: bool = False,
    sasl_secret: str | None = None,
    sasl_mechanism: str = "PLAIN",
    security_protocol: str = "SASL_PLAINTEXT",
    properties: dict[str, str] | None = None,
    message_id_replies: str | None = None,
    registry: dict[str, Any] | None = None,
    fmt: str = "native",
) -> JobConfig:
    """A bridge with a jmsToKafka route per topic in `writes` and a kafkaToJms route per topic in `reads`;
    those are requests to a `messageId` service answering to the topic `message_id_replies` when given."""
    kafka: dict[str, Any] = {
        "bootstrapServers": bootstrap,
        "createJournalTopic": create_journal,
        "journalPartitions": journal_partitions,
    }
    if journal is not None:
        kafka["journalTopic"] = journal
    if sasl_secret is not None:
        kafka["securityProtocol"] = security_protocol
        kafka["sasl"] = {"mechanism": sasl_mechanism, "credentialsSecretRef": {"name": sasl_secret}}
        if security_protocol == "SASL_PLAINTEXT":  # the test broker's loopback listener
            kafka["sasl"]["allowClearText"] = True
    elif security_protocol == "SSL":
        kafka["securityProtocol"] = security_protocol
    if properties:
        kafka["properties"] = properties
    if registry is not None:  # spec.kafka.schemaRegistry, for routes of a `fmt` that needs it
        kafka["schemaRegistry"] = registry
    routes: list[dict[str, Any]] = [
        {
            "name": f"to-kafka-{topic}",
            "spec": {"bridgeRef": {"name": bridge_id}, "kafkaTopic": topic, "format": fmt},
        }
        for topic in writes
    ] + [
        {
            "name": f"from-kafka-{topic}",
            "spec": {
                "bridgeRef": {"name": bridge_id},
                "direction": "kafkaToJms",
                "kafkaTopic": topic,
                "jmsDestination": {"queue": f"{topic}.out"},
            }
            | (
                {"reply": {"topics": [message_id_replies], "correlation": "messageId"}}
                if message_id_replies
                else {}
            ),
        }
        for topic in reads
    ]
    jms: dict[str, Any] = {
        "connectionFactory": {"className": "org.example.Factory"},
        "sources": [{"queue": "in"}],
    }
    if message_id_replies:
        jms |= {"sources": [{"queue": "in"}, {"queue": "replies"}], "replyQueue": "replies"}
    routes.sort(key=lambda route: str(route["name"]))
    return JobConfig.model_validate(
        {
            "bridgeId": bridge_id,
            "bridge": {
                "jms": jms,
                "kafka": kafka,
                "routing": {"deadLetterTopic": dead_letter} if dead_letter else {},
                "delivery": "exactlyOnce" if exactly_once else "atLeastOnce",
            },
            "routes": routes,
        }
    )
