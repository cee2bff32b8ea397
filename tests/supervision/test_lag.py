"""The live lag of real-time mode, read from Apache Kafka: the journal's end against
what the reader group committed, as the tasks commit it after each range."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from bridge_job.journal.reading import consumer_settings
from bridge_job.supervision.lag import Lag, LagWatch
from testbed.brokers import KafkaBroker
from tests.support.journal import journal, journalled_bridge, order


def test_the_journal_lag_is_what_the_reader_group_has_not_committed(
    kafka: KafkaBroker, tmp_path: Path
) -> None:
    job, _, _ = journalled_bridge(kafka, tmp_path)
    journal(kafka, job, *(order(seq) for seq in range(5)))
    journal_lag: list[int] = []
    ingress_lag: list[Lag] = []
    watch = LagWatch(lambda: job, journal_lag.append, ingress_lag.append, interval=3600)
    try:
        watch.read()
        reader = Consumer(consumer_settings(job))  # a task's commit after its first range
        reader.commit(offsets=[TopicPartition(job.journal_topic, 0, 3)], asynchronous=False)
        reader.close()
        watch.read()
    finally:
        watch.stop()
    assert journal_lag == [5, 2]
    assert ingress_lag == [{}, {}]  # no kafkaToJms route
