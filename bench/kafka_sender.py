"""Load generator for bench/ingress.py: produces 1 KB records to one Kafka topic, as a plain producer.

Runs as its own process so that its CPU (librdkafka) is accounted apart from the path under test. The
protocol on stdout is bench/jms_sender.py's:

    BENCH ready                 producer up, the topic's metadata fetched
    (waits for a line on stdin: the go signal)
    BENCH {"first_send": ..., "last_send": ..., "sent": N}    wall-clock times (time.time()), at the end

Each record is what a plain Kafka producer writes: a UTF-8 value (so the bridge makes a TextMessage of
it), the key `seq` in decimal, and two headers the `native` format turns into string properties:
`jms.seq` (`--seq-base` + i) and `jms.run`. Its timestamp is the producer's (CreateTime, taken at
`produce()`): the latency figures are measured from it.

- full speed (`--rate 0`): `linger.ms` 5, flushed at the end;
- paced (`--rate R`): record i is produced at start + i/R (back to back when behind), `linger.ms` 0, so
  each goes to the broker at once.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Producer

from bench.pacing import paced

VALUE = b"x" * 1024


def say(line: str) -> None:
    sys.stdout.write(f"BENCH {line}\n")
    sys.stdout.flush()


def produce(
    producer: Producer, topic: str, value: bytes, key: bytes, headers: list[tuple[str, bytes]]
) -> None:
    while True:
        try:
            producer.produce(topic, value, key, headers=headers)  # type: ignore[arg-type]  # list is invariant
            producer.poll(0)
            return
        except BufferError:
            producer.poll(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--rate", type=float, default=0.0, help="records per second; 0 = full speed")
    parser.add_argument("--run", default="bench", help="value of the `jms.run` header")
    parser.add_argument("--seq-base", type=int, default=0)
    args = parser.parse_args()

    linger = 0 if args.rate > 0 else 5
    # Not idempotent: an idempotent producer's first records wait for its producer id (500 ms here).
    producer = Producer({"bootstrap.servers": args.bootstrap, "linger.ms": linger})
    producer.list_topics(args.topic, timeout=30)
    run = args.run.encode()
    say("ready")
    if not sys.stdin.readline():
        return  # the benchmark went away before the go signal
    first_send = time.time()
    for i in paced(args.count, args.rate):
        seq = str(args.seq_base + i).encode()
        produce(producer, args.topic, VALUE, seq, [("jms.seq", seq), ("jms.run", run)])
    last_send = time.time()
    remaining = producer.flush(60)
    if remaining:
        raise SystemExit(f"{remaining} records not acknowledged by {args.bootstrap} within 60 s")
    say(json.dumps({"first_send": first_send, "last_send": last_send, "sent": args.count}))


if __name__ == "__main__":
    main()
