"""Look-back benchmark: a new active's search of the journal for the originals of redelivered messages.

    python bench/lookback.py [--records 30000] [--runs 5]

Prints exactly one JSON line on stdout; progress goes to stderr. Takes about a minute.

After a crash the messages redelivered to the new active were taken by the former one and never
journalled, so the look-back (`bridge_job.journal.reading.find_earlier`) finds none of them and reads the
whole window backwards, in growing chunks (docs/failover.md). Here: `--records` journal records (1 KB
text bodies and 8 properties, written by the job's `JournalWriter` in transactions of 200, as the ingest
writes them) on one partition of an Apache Kafka broker started here, nothing written meanwhile, and a
look-back for 20 message ids the partition does not hold, with

- the job's consumer settings (`bridge_job.journal.reading.consumer_settings`), and
- the baseline: the same with librdkafka's default `fetch.wait.max.ms` (500 ms), which the job's
  consumers used before. At the end of the log the client's fetch beyond a chunk waits that long for new
  records, and the next chunk's first fetch waits behind it.

The two alternate over `--runs` runs, each with a consumer of its own. Figures per path: the median
seconds of a look-back and records read per second; `speedup` is baseline / job.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bridge_job.formats.journal import Epoch, journal_record
from bridge_job.journal.reading import consumer_settings, find_earlier
from bridge_job.journal.writer import JournalWriter, Written
from bridge_job.kafka.reading import new_consumer, watermarks
from bridge_job.message import Destination, DestinationKind, JmsMessage, Property
from jmsbridge.kafka_server import KafkaBroker
from testbed.builders import config

MESSAGE_BYTES = 1024
BATCH = 200
WANTED = [f"ID:never-journalled-{n}" for n in range(20)]


def note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def fill(writer: JournalWriter, topic: str, records: int) -> None:
    queue = Destination(DestinationKind.QUEUE, "bench.lookback")
    properties = {f"p{k}": Property.string(f"value {k}") for k in range(8)}
    batch: list[Written] = []
    for seq in range(records):
        body = f"{seq:08d}".ljust(MESSAGE_BYTES, ".")
        message = JmsMessage(queue, body=body, message_id=f"ID:bench-{seq}", properties=properties)
        batch.append((topic, journal_record(message), 0))
        if len(batch) == BATCH or seq == records - 1:
            writer.write(batch)
            batch = []


def look_back(settings: dict[str, str | int | float | bool], topic: str, end: int) -> float:
    consumer = new_consumer(settings | {"group.id": f"bench-{uuid.uuid4().hex}"})
    try:
        began = time.perf_counter()
        found = find_earlier(consumer, topic, 0, end, WANTED, not_before_ms=0)
        took = time.perf_counter() - began
    finally:
        consumer.close()
    if found:
        raise SystemExit(f"found ids the journal does not hold: {sorted(found)}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=30_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    kafka = KafkaBroker(optimized=True)
    times: dict[str, list[float]] = {"job": [], "baseline": []}
    try:
        kafka.start()
        job = config(name=f"bench-{uuid.uuid4().hex[:8]}", bootstrap=kafka.bootstrap)
        topic = job.journal_topic
        kafka.create_topics(topic)
        writer = JournalWriter(job, partitions=1)
        writer.open(Epoch("bench/local", "bench"))
        fill(writer, topic, args.records)
        writer.close()
        probe = new_consumer(consumer_settings(job))
        _, end = watermarks(probe, topic, 0)  # past the last transaction's commit marker
        probe.close()
        note(f"journal filled: {args.records} records")
        paths = {
            "job": consumer_settings(job),
            "baseline": consumer_settings(job) | {"fetch.wait.max.ms": 500},
        }
        for run in range(args.runs):
            for name, settings in paths.items():
                times[name].append(look_back(settings, topic, end))
            job_s, base_s = times["job"][-1], times["baseline"][-1]
            note(f"run {run + 1}/{args.runs}: job {job_s:.3f} s, baseline {base_s:.3f} s")
    finally:
        kafka.cleanup()

    figures = {
        name: {
            "lookback_s_p50": round(statistics.median(t), 3),
            "records_s": round(args.records / statistics.median(t)),
        }
        for name, t in times.items()
    }
    result = {
        "benchmark": "lookback",
        "records": args.records,
        "message_bytes": MESSAGE_BYTES,
        "runs": args.runs,
        **figures,
        "speedup": round(figures["baseline"]["lookback_s_p50"] / figures["job"]["lookback_s_p50"], 2),
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
