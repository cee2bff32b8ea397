"""Nothing is lost when the bridge crashes: SIGKILL the job twice while 6,000 messages flow.

A real JMS producer sends persistent messages (each acknowledged by the broker before the next: ActiveMQ
Classic, or Artemis); the job is
killed with SIGKILL (with Spark's JVM and workers) whenever the destination topic has grown by another
third, and restarted on the same checkpoint (the second kill hits a job that recovered from the first: a
third would test nothing new). At the end every sent message must be in Kafka. With
`atLeastOnce` the duplicates a replayed batch lets through are counted and printed; with `exactlyOnce`
there must be none (read_committed).

The suite runs `atLeastOnce`: tests/e2e/test_failover.py kills an `exactlyOnce` job twice under load (the
killed instance comes back on the same checkpoint) and finds neither loss nor duplicate. With
JMSBRIDGE_ALL_MODES=1 both modes run here (testbed/harness.py `deliveries`). A message acknowledged
on JMS and missing from the topic fails the test in either mode.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from bridge_job.jms import detach_thread
from bridge_job.message import Destination, DestinationKind, JmsMessage, Property
from jmsbridge.local import BridgeJob, jms_connection
from testbed.brokers import KafkaBroker, wait_until
from testbed.harness import (
    ONE_AT_A_TIME,
    bridge_document,
    deliveries,
    route_document,
    write_yaml,
)
from testbed.topic_log import TopicLog
from tests.support.providers import JmsProvider

pytestmark = [pytest.mark.e2e, ONE_AT_A_TIME]

MESSAGES = 6_000  # each kill lands while messages flow: more only makes the test longer
KILLS = 2


def high_watermark(kafka: KafkaBroker, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "watermarks"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)[1]
    finally:
        consumer.close()


# What a crash leaves to the JMS broker (the killed job's transaction rolled back, its messages handed to
# the restarted one) is the broker's own: both brokers, Artemis through its javax client with a login.
@pytest.mark.parametrize("broker_kind", ["activemq", "artemis"])
@pytest.mark.parametrize("delivery", deliveries("atLeastOnce"))
def test_no_message_lost_across_two_kills(
    kafka: KafkaBroker, tmp_path: Path, delivery: str, broker_kind: str, request: pytest.FixtureRequest
) -> None:
    provider = JmsProvider(broker_kind, request.getfixturevalue(broker_kind))
    activemq = provider.broker
    n = uuid.uuid4().hex[:8]
    source, topic = f"crash.{n}", f"crash-{n}"
    kafka.create_topics(topic)
    bridge = bridge_document(
        f"crash-{n}",
        activemq,
        kafka,
        [{"queue": source}],
        spark={"maxRecordsPerBatch": 2000},
        delivery=delivery,
        jms=provider.jms(),
    )
    route = route_document("all", f"crash-{n}", topic, key={"property": "seq"})
    files = [write_yaml(tmp_path / "bridge.yaml", bridge), write_yaml(tmp_path / "routes.yaml", route)]

    acknowledged: list[int] = []
    send_error: list[BaseException] = []

    def produce() -> None:
        try:
            destination = Destination(DestinationKind.QUEUE, source)
            with jms_connection(activemq) as connection, connection.producer() as producer:
                for seq in range(MESSAGES):
                    body = f"{seq:08d}".ljust(256, ".")
                    producer.send(JmsMessage(destination, body=body, properties={"seq": Property.of(seq)}))
                    acknowledged.append(seq)
        except BaseException as error:  # reported by the test thread
            send_error.append(error)
        finally:
            detach_thread()  # else the JVM's shutdown waits for this thread at exit

    sender = threading.Thread(target=produce, name="jms-sender")
    job = BridgeJob(files, tmp_path, env=provider.job_env()).start()
    try:
        job.wait_running()
        sender.start()
        for kill in range(1, KILLS + 1):
            target = MESSAGES * kill // (KILLS + 1)

            def written(at_least: int = target) -> bool:
                return high_watermark(kafka, topic) >= at_least

            wait_until(written, 300, f"{target} records before kill {kill}")
            job.kill()
            job.start()
            job.wait_running()
        sender.join(timeout=600)
        assert not send_error, send_error
        assert len(acknowledged) == MESSAGES
        # Duplicates count towards the records, so wait for every distinct message, or time out.
        output = TopicLog(kafka.bootstrap, topic)
        try:

            def every_message_in() -> bool:
                output.catch_up()
                return len({r.key for r in output.records}) >= MESSAGES

            with contextlib.suppress(TimeoutError):  # what is missing is told below
                wait_until(every_message_in, 300, "every message in the topic", 0.5)
            threading.Event().wait(3.0)  # a settle window for late duplicates, not a wait on a condition
            output.catch_up()
            records = list(output.records)
        finally:
            output.close()
    finally:
        job.stop()

    seqs = Counter(int(r.key or b"-1") for r in records)
    lost = set(acknowledged) - set(seqs)
    duplicates = sum(count - 1 for count in seqs.values())
    print(
        f"\ncrash test ({delivery}): sent={MESSAGES} kills={KILLS} received={len(records)} "
        f"lost={len(lost)} duplicates={duplicates}"
    )
    assert not lost, f"{len(lost)} acknowledged messages never reached Kafka, e.g. {sorted(lost)[:10]}"
    assert set(seqs) == set(range(MESSAGES))
    if delivery == "exactlyOnce":
        assert duplicates == 0, f"{duplicates} duplicates reached {topic} despite exactlyOnce"
