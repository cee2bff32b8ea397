"""Committing a consumer group's offsets within a timeout.

A consumer's synchronous commit (`Consumer.commit(asynchronous=False)`) takes no timeout, and librdkafka
asks again, without end, for a commit whose coordinator does not answer (librdkafka#3740): a real-time
task whose Kafka restarted waited on one for five minutes, past the bridge's patience, and never said so.
The admin API's `alter_consumer_group_offsets` commits the same offsets (its coordinator applies them like
a consumer's; the job's groups have no members, as that API requires: their consumers assign partitions,
they never subscribe) and gives up after its timeout, so the caller waits Kafka out like any other call
(kafka/waiting.py).

Its admin client does not re-bootstrap, as the transactional producers (kafka/clients.NO_REBOOTSTRAP).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from bridge_job.config import KafkaSpec
from bridge_job.kafka.clients import NO_REBOOTSTRAP, client_config

_admins: dict[str, AdminClient] = {}  # per Kafka settings, for this process's tasks


def commit_offsets(kafka: KafkaSpec, group: str, offsets: Sequence[TopicPartition], timeout: float) -> None:
    """Commit `offsets` for `group`; a KafkaException when Kafka does not confirm it within `timeout`."""
    key = kafka.model_dump_json()
    admin = _admins.get(key)
    if admin is None:
        admin = _admins[key] = AdminClient(client_config(kafka) | NO_REBOOTSTRAP)
    request = ConsumerGroupTopicPartitions(group, list(offsets))
    future = admin.alter_consumer_group_offsets([request], request_timeout=timeout)[group]
    try:
        result = future.result(timeout=timeout + 5)  # the request's own timeout ends it first
    except concurrent.futures.TimeoutError:
        error = KafkaError(KafkaError._TIMED_OUT, f"no answer to the commit of {group}'s offsets")
        raise KafkaException(error) from None
    for partition in result.topic_partitions or []:
        if partition.error is not None:
            raise KafkaException(partition.error)
