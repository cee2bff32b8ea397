"""Journal ingest: JMS -> journal topic, in the driver, one transacted JMS session per source.

For each received batch: write every message to the journal (idempotent producer, acks=all), wait
until Kafka has acknowledged all of them, and only then commit the JMS session. A crash or a Kafka
error before the commit rolls the batch back on the broker, which redelivers it: the journal may get a
message twice (the Spark query drops such duplicates by JMSMessageID), never lose one.

Kafka being unreachable is transient (roll back, back off, try again); a missing journal topic or a
refused write is a hard failure that stops the bridge.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bridge_job.config import ENV_JMS_PASSWORD, ENV_JMS_USERNAME, JmsSource, JobConfig
from bridge_job.errors import BridgeStopped
from bridge_job.jms import BatchConsumer, JmsConnection, JmsError, detach_thread
from bridge_job.journal import journal_partition, journal_record, journal_topic
from bridge_job.kafka_clients import client_config, delivery_failure, is_hard, producer_config
from bridge_job.message import JmsMessage

log = logging.getLogger("jmsbridge.ingest")

DEFAULT_CLASSPATH = ("/opt/jmsbridge/jms-lib/*.jar",)
KAFKA_RETRY_SECONDS = (0.5, 1.0, 2.0, 5.0, 10.0)


def jms_credentials(config: JobConfig) -> tuple[str, str] | None:
    if config.bridge.jms.credentials_secret_ref is None:
        return None
    username, password = os.environ.get(ENV_JMS_USERNAME), os.environ.get(ENV_JMS_PASSWORD)
    if username is None or password is None:
        raise BridgeStopped(
            f"JMS credentials need the environment variables {ENV_JMS_USERNAME} and {ENV_JMS_PASSWORD} "
            f"(from Secret {config.bridge.jms.credentials_secret_ref.name})"
        )
    return username, password


def jms_classpath(config: JobConfig) -> Sequence[str]:
    if config.bridge.jms.classpath:
        return config.bridge.jms.classpath
    from_env = os.environ.get("JMSBRIDGE_CLASSPATH")
    return from_env.split(os.pathsep) if from_env else DEFAULT_CLASSPATH


def ensure_journal_topic(config: JobConfig) -> int:
    """The journal's partition count; creates the topic first when the spec asks for it."""
    kafka = config.bridge.kafka
    admin = AdminClient(client_config(kafka))
    topic = config.journal_topic
    metadata = admin.list_topics(timeout=30)
    if topic not in metadata.topics and kafka.create_journal_topic:
        spec = journal_topic(topic, kafka.journal_partitions, len(metadata.brokers))
        new = NewTopic(topic, spec.partitions, spec.replication_factor, config=dict(spec.config))
        for future in admin.create_topics([new], operation_timeout=30).values():
            try:
                future.result(timeout=60)
            except Exception as error:  # created meanwhile by the operator is fine
                if "TOPIC_ALREADY_EXISTS" not in str(error):
                    raise BridgeStopped(f"cannot create journal topic {topic}: {error}") from None
        metadata = admin.list_topics(timeout=30)
    found = metadata.topics.get(topic)
    if found is None or found.error is not None:
        raise BridgeStopped(
            f"journal topic {topic} does not exist: create it or set kafka.createJournalTopic"
        )
    return len(found.partitions)


class Ingest:
    """Threads that move JMS messages into the journal until stopped or failed."""

    def __init__(
        self, config: JobConfig, on_batch: Callable[[int], None] = lambda n: None, partitions: int = 1
    ) -> None:
        self.config = config
        self.on_batch = on_batch
        self.partitions = partitions
        self.stop_event = threading.Event()
        self.failure: BaseException | None = None
        self.threads: list[threading.Thread] = []
        self.connection: JmsConnection | None = None
        self.producer = Producer(producer_config(config.bridge.kafka))

    def start(self) -> Ingest:
        jms = self.config.bridge.jms
        try:
            self.connection = JmsConnection(
                jms,
                credentials=jms_credentials(self.config),
                classpath=jms_classpath(self.config),
                client_id=jms.client_id or f"jmsbridge-{self.config.bridge_id}",
            )
        except JmsError as error:
            raise BridgeStopped(f"cannot connect to JMS: {error}") from None
        for source in jms.sources:
            thread = threading.Thread(
                target=self._run, args=(source,), name=f"ingest-{source.address}", daemon=True
            )
            thread.start()
            self.threads.append(thread)
        return self

    def stop(self) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout=30)
        if self.connection is not None:
            self.connection.close()

    def _run(self, source: JmsSource) -> None:
        assert self.connection is not None
        try:
            consumer = self.connection.consumer(source)
            try:
                self._pump(consumer)
            finally:
                consumer.close()
        except BaseException as error:
            if not self.stop_event.is_set():
                self.failure = error
                self.stop_event.set()
        finally:
            detach_thread()

    def _pump(self, consumer: BatchConsumer) -> None:
        ingest = self.config.bridge.jms.ingest
        while not self.stop_event.is_set():
            batch = consumer.receive_batch(ingest.max_batch_messages, ingest.max_batch_delay_ms)
            if not batch:
                continue
            attempt = 0
            while not self._journal(batch):
                consumer.rollback()  # the broker redelivers the batch; nothing is lost
                if self.stop_event.wait(KAFKA_RETRY_SECONDS[min(attempt, len(KAFKA_RETRY_SECONDS) - 1)]):
                    return
                attempt += 1
                batch = consumer.receive_batch(ingest.max_batch_messages, ingest.max_batch_delay_ms)
                if not batch:
                    break
            else:
                consumer.commit()
                self.on_batch(len(batch))

    def _journal(self, batch: list[JmsMessage]) -> bool:
        """True when Kafka acknowledged every message; False on a transient error; raises on a hard one."""
        topic = self.config.journal_topic
        errors: list[Any] = []

        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                errors.append(error)

        for message in batch:
            record = journal_record(message)
            while True:
                try:
                    self.producer.produce(
                        topic,
                        record.value,
                        record.key,
                        partition=journal_partition(message, self.partitions),
                        headers=record.headers,  # type: ignore[arg-type]  # list is invariant
                        on_delivery=delivered,
                    )
                    break
                except BufferError:
                    self.producer.poll(0.1)
        remaining = self.producer.flush(30)
        for error in errors:
            if is_hard(error):
                raise delivery_failure(topic, error)
        if errors or remaining:
            log.warning(
                "journal write of %d messages failed (%s); rolling back for redelivery",
                len(batch),
                errors[0].str() if errors else f"{remaining} unacknowledged",
            )
            return False
        return True
