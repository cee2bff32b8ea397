"""Which ingest partition takes which JMS source: pure, so every process plans the same.

A bridge takes messages in through one ingest partition per journal partition that has sources, each with
its own JMS connection and its own transactional journal producer (journal/writer.py), so that busy
sources in different partitions journal side by side instead of one transaction at a time.

A queue goes to the partition its messages are journalled to (formats/journal.py `journal_partition`:
crc32 of its URI modulo the count), so a destination is consumed, written and read in order by one
partition. Every durable topic subscription goes to one partition, that of the first topic in name order:
they belong to the bridge's JMS client id, which a broker gives to one connection at a time.
"""

from __future__ import annotations

import os

from bridge_job.config import ConfigError, JmsSource
from bridge_job.formats.journal import destination_partition
from bridge_job.message import Destination, DestinationKind


def source_destination(source: JmsSource) -> Destination:
    kind = DestinationKind.QUEUE if source.queue is not None else DestinationKind.TOPIC
    return Destination(kind, source.address)


def ingest_partitions(sources: list[JmsSource], partitions: int) -> dict[int, list[JmsSource]]:
    """The sources of each partition that has any, in the order given, partitions in ascending order."""
    durable = sorted((s for s in sources if s.topic is not None), key=lambda s: s.address)
    durable_partition = destination_partition(source_destination(durable[0]), partitions) if durable else 0
    assigned: dict[int, list[JmsSource]] = {}
    for source in sources:
        topic = source.topic is not None
        p = durable_partition if topic else destination_partition(source_destination(source), partitions)
        assigned.setdefault(p, []).append(source)
    return dict(sorted(assigned.items()))


# Where the ingest runs: `driver` (the default) or `executors`, as long-running tasks of an `ingest` query
# (ingest/source.py). A switch for the job and its test suite while the executors' ingest is built (issue
# 46, docs/design/executor-ingest.md); no bridge can set it yet: the operator does not size executors for
# it. Planning processes and Python workers inherit it from the driver.
RUN_ON_ENV = "JMSBRIDGE_INGEST_RUN_ON"
RUN_ON = ("driver", "executors")


def runs_on_executors() -> bool:
    value = os.environ.get(RUN_ON_ENV) or "driver"
    if value not in RUN_ON:
        raise ConfigError(f"{RUN_ON_ENV}={value!r}: expected one of {', '.join(RUN_ON)}")
    return value == "executors"
