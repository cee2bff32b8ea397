"""Journal write benchmark: the fenced transactional journal producer against the idempotent one it replaced.

    python bench/journal_write.py [--messages 40000] [--batch 200] [--rounds 4]

Prints exactly one JSON line on stdout; progress goes to stderr. Takes well under a minute.

Both write the ingest's real journal records (a persistent 1 KB TextMessage in the `native` encoding,
keyed by its JMSMessageID) to one Apache Kafka broker started here, batch by batch as the ingest does with its
default batch of 200 messages, each batch acknowledged before the next (where the ingest commits JMS):

- baseline: an idempotent producer (`acks=all`), `flush` after each batch: the journal before it became
  transactional;
- transactional: `bridge_job.journal.writer.JournalWriter.write`, one Kafka transaction per batch.

The two alternate in `--rounds` rounds of `--messages / --rounds` messages each, so that a change in the
machine's load hits both alike. Figures per path: messages per second over its rounds, CPU seconds of
this process per 1,000 messages (librdkafka's threads included; the broker is not counted), and the
median batch round trip. Ratios are transactional / baseline.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Producer

from bridge_job.formats.journal import Epoch, journal_record
from bridge_job.journal.writer import JournalWriter, Written
from bridge_job.kafka.clients import producer_config
from bridge_job.message import Destination, DestinationKind, JmsMessage
from jmsbridge.kafka_server import KafkaBroker
from testbed.builders import config

MESSAGE_BYTES = 1024


def note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def batches(topic: str, messages: int, batch: int) -> list[list[Written]]:
    queue = Destination(DestinationKind.QUEUE, "bench.journal")
    records: list[Written] = []
    for seq in range(messages):
        body = f"{seq:08d}".ljust(MESSAGE_BYTES, ".")
        message = JmsMessage(queue, body=body, message_id=f"ID:bench-{uuid.uuid4().hex}")
        records.append((topic, journal_record(message), 0))
    return [records[i : i + batch] for i in range(0, len(records), batch)]


def idempotent(producer: Producer) -> Callable[[list[Written]], bool]:
    def write(records: list[Written]) -> bool:
        for topic, record, partition in records:
            headers: Any = record.headers  # a list of (str, bytes) pairs, which librdkafka takes
            producer.produce(topic, record.value, record.key, partition=partition or 0, headers=headers)
        return producer.flush(30) == 0

    return write


@dataclass
class Totals:
    messages: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    trips: list[float] = field(default_factory=list)  # each batch's round trip, seconds

    def run(self, write: Callable[[list[Written]], bool], work: list[list[Written]]) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        for records in work:
            began = time.perf_counter()
            if not write(records):
                raise SystemExit("a journal write failed")
            self.trips.append(time.perf_counter() - began)
            self.messages += len(records)
        self.wall += time.perf_counter() - wall
        self.cpu += time.process_time() - cpu

    def figures(self) -> dict[str, float]:
        return {
            "msg_s": round(self.messages / self.wall, 1),
            "cpu_s_per_1000": round(self.cpu / self.messages * 1000, 4),
            "batch_ms_p50": round(statistics.median(self.trips) * 1000, 2),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=40_000, help="per path, over all rounds")
    parser.add_argument("--batch", type=int, default=200, help="messages per batch (jms.ingest default)")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()

    kafka = KafkaBroker(optimized=True)
    try:
        kafka.start()
        job = config(name=f"bench-{uuid.uuid4().hex[:8]}", bootstrap=kafka.bootstrap)
        kafka.create_topics(job.journal_topic)
        writer = JournalWriter(job, partitions=1)
        writer.open(Epoch("bench/local", "bench"))
        paths = {
            "baseline": idempotent(Producer(producer_config(job.bridge.kafka))),
            "transactional": writer.write,
        }
        per_round = args.messages // args.rounds
        totals = {name: Totals() for name in paths}
        Totals().run(paths["baseline"], batches(job.journal_topic, 2 * args.batch, args.batch))  # warm-up
        for round_ in range(args.rounds):
            for name, write in paths.items():
                totals[name].run(write, batches(job.journal_topic, per_round, args.batch))
            note(f"round {round_ + 1}/{args.rounds} done")
    finally:
        kafka.cleanup()

    figures = {name: total.figures() for name, total in totals.items()}
    base, fenced = figures["baseline"], figures["transactional"]
    result = {
        "benchmark": "journal_write",
        "messages": totals["baseline"].messages,
        "batch": args.batch,
        "message_bytes": MESSAGE_BYTES,
        **figures,
        "throughput_ratio": round(fenced["msg_s"] / base["msg_s"], 3),
        "cpu_per_message_ratio": round(fenced["cpu_s_per_1000"] / base["cpu_s_per_1000"], 3),
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
