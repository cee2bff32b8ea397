"""Egress benchmark: JMS -> Kafka through the bridge job, against a plain loop, in the same run.

    python bench/egress.py [--messages 40000] [--latency-seconds 15] [--journal-partitions 1]
                           [--delivery atLeastOnce|exactlyOnce] [--mode realTime|microBatch]
                           [--max-records-per-batch N] [--trigger-ms MS]
                           [--warmup-messages 1000] [--poll-backoff-ms 5] [--timeout 600]

Run from the repository root after scripts/setup.sh (needs Debian's ActiveMQ, Kafka's jars, pyspark, psutil).
Prints exactly one JSON line on stdout; progress goes to stderr. Takes a few minutes.

Both paths run against the same brokers, started here: ActiveMQ Classic with its persistent store and
Apache Kafka (one KRaft node), and use the same clients (the project's JPype JMS adapter, confluent-kafka):

- baseline (bench/baseline_loop.py, its own process): one transacted JMS consumer taking batches with the
  bridge's default ingest settings (200 messages, 100 ms) over the same broker URL as the bridge, each
  message encoded in the `native` format and produced straight to the topic (idempotent, linger 5 ms),
  the JMS session committed after each flush;
- journaled (the same loop with `--journal`): each batch produced to a journal topic and flushed, read
  back from it with the bridge's range reader, and what was read produced to the topic, before the JMS
  commit. What a journal costs without Spark; `journaled_*_ratio` compare the bridge with it;
- bridge: `jmsbridge job` (ingest -> journal -> Spark query -> topic) through `jmsbridge.local.BridgeJob`,
  with the bridge's defaults (real-time mode, for one) unless an option above overrides them: `--mode`,
  the journal's partition count (the destination topics get as many), the delivery guarantee,
  `spark.maxRecordsPerBatch`, `spark.triggerIntervalMs` (micro-batch mode).

For each path, baseline, journaled, bridge:

1. Start the path and wait until it runs (the job's ` running: ` log line; the loop's ready line).
2. Warm-up: `--warmup-messages` sent as in 3. and awaited on the topic, not counted (the bridge's first
   micro-batch starts PySpark's workers and takes seconds; ActiveMQ starts cold for the baseline). Its
   figures are reported under `warmup`; `--warmup-messages 0` leaves it out.
3. Throughput, steady flow: a sender process (bench/jms_sender.py, connected beforehand) sends N
   persistent 1 KB text messages at full speed, transacted, committed every 250. The window runs from
   its first send to the moment the consumer of the destination topic has seen the last of the N
   distinct records (by their `seq` property, a `jms.seq` header in the native format): every stage,
   JMS ingest included, is inside it. Throughput = N / window. `sender_msg_s` is how fast the sender
   went: when it is close to the throughput, the sender (or ActiveMQ's store) set the pace.
4. CPU over that window (bench/cpu.py, psutil, sampled every 0.5 s): the path's process tree (the job's
   driver python with its ingest JVM, Spark's JVM, PySpark's python daemon and workers; or the loop),
   the ActiveMQ tree and the Kafka broker's JVM; "path total" is their sum, reported as CPU seconds per 1,000
   messages, as cores busy (CPU seconds / window) and as each group's share. The load generator (sender
   process, and this process, which consumes the topic) is reported apart and not counted.
5. Latency: messages sent at a fixed rate, 50 % of the baseline's measured throughput, for
   `--latency-seconds`, each in its own auto-acknowledged send (asynchronous: ActiveMQ's synchronous
   persistent send caps one producer at about 800/s); latency = the time the topic's consumer saw the
   record - its JMSTimestamp (set by the JMS client at send, carried as the `jms.JMSTimestamp` header
   by both paths). p50 and p99, and the path's CPU per 1,000 messages at that rate
   (`latency_cpu_s_per_1000`, as in 4.). `latency_rate_over_throughput` above 1 means the path cannot
   carry that rate: its latency then measures a growing backlog.

The destination consumer (bench/topic_watch.py) starts at the topic's high watermarks taken before the
load, so it cannot miss the first records, and holds no fetch open on a caught-up topic: it polls the
watermarks every `--poll-backoff-ms` and reads only when they move, so a record is seen up to that long
(plus two round trips) late, which bounds the measurement error, the same on every broker.

For the bridge, the `batch {json}` lines the job logs for the throughput window's records give the number
of micro-batches, the records they carried and the medians of their duration, records and phases
(`phases_ms`; fields a line lacks are left out).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.local_run import (
    BENCH,
    Child,
    Collected,
    Harness,
    PathUnderTest,
    Watching,
    batch_lines,
    bridge_document,
    harness_options,
    median,
    notes,
    quantile,
    ratio,
    run_and_print,
)
from bench.topic_watch import TopicWatch
from jmsbridge.kafka_server import KafkaBroker
from jmsbridge.local import ActiveMqBroker
from testbed.harness import route_document, write_yaml

MESSAGE_BYTES = 1024
COMMIT_EVERY = 250


note = notes("egress")


def sender(activemq: ActiveMqBroker, queue_name: str, count: int, run: str, rate: float = 0.0) -> Child:
    argv = [str(BENCH / "jms_sender.py"), "--url", activemq.url, "--queue", queue_name]
    argv += ["--count", str(count), "--run", run, "--rate", str(rate)]
    # Full speed: transacted batches. Paced: each message on its own, without waiting for the store
    # (a synchronous persistent send caps one producer at about 800/s).
    argv += ["--commit-every", "0", "--async-send"] if rate > 0 else ["--commit-every", str(COMMIT_EVERY)]
    child = Child(f"sender {run}", argv)
    child.wait_ready()
    return child


@dataclass
class Collector:
    """The records of one phase (`run` property) seen on the destination topic."""

    run: str
    expected: int
    first_seen: dict[int, float] = field(default_factory=dict)  # seq -> wall-clock time first seen
    latencies_ms: list[float] = field(default_factory=list)
    records: int = 0
    last_seen: float = 0.0

    def on_records(self, records: list[Any], seen: float) -> bool:
        run = self.run.encode()
        for record in records:
            headers = dict(record.headers() or [])
            if headers.get("jms.run") != run:
                continue  # another phase's record
            self.records += 1
            seq = int(headers["jms.seq"])
            if seq in self.first_seen:
                continue
            self.first_seen[seq] = seen
            self.last_seen = seen
            sent_ms = headers.get("jms.JMSTimestamp")
            if sent_ms is not None:
                self.latencies_ms.append(seen * 1000 - int(sent_ms))
        return len(self.first_seen) >= self.expected

    @property
    def duplicates(self) -> int:
        return self.records - len(self.first_seen)


def batch_figures(batches: list[dict[str, Any]]) -> dict[str, Any]:
    """Count and medians of the micro-batches' figures; fields a batch lacks are left out."""

    def numbers(key: str) -> list[float]:
        return [float(b[key]) for b in batches if isinstance(b.get(key), int | float)]

    phases: dict[str, list[float]] = {}
    for b in batches:
        for phase, ms in (b.get("phases_ms") or {}).items():
            if isinstance(ms, int | float):
                phases.setdefault(phase, []).append(float(ms))
    durations = numbers("duration_seconds")
    return {
        "count": len(batches),
        "input_records": int(sum(numbers("input_records"))),
        "median_duration_s": median(durations),
        "max_duration_s": round(max(durations), 3) if durations else None,
        "median_input_records": median(numbers("input_records")),
        "phases_ms_median": {phase: median(values) for phase, values in sorted(phases.items())},
    }


class Bench(Harness):
    name = "egress"
    load_words = ("sending", "messages")
    arrival = "record"

    def __init__(self, args: argparse.Namespace, activemq: ActiveMqBroker, kafka: KafkaBroker) -> None:
        super().__init__(args, activemq, kafka)
        self.backoff = args.poll_backoff_ms / 1000
        self.journaled: dict[str, Any] = {}

    def destination(self, path: PathUnderTest) -> str:
        return path.topic

    def logged_records(self, log: Path, start: int, end: int) -> int:
        return sum(b.get("input_records", 0) for b in batch_lines(log, start, end))

    def batch_figures(self, log: Path, start: int, end: int) -> dict[str, Any]:
        return batch_figures(batch_lines(log, start, end))

    def load(self, path: PathUnderTest, count: int, run: str, rate: float) -> Child:
        return sender(self.activemq, path.queue, count, run, rate)

    def collector(self, run: str, count: int) -> Collector:
        return Collector(run, count)

    def watch(self, path: PathUnderTest, collector: Collected) -> Watching:
        assert isinstance(collector, Collector)
        watch = TopicWatch(self.kafka.bootstrap, path.topic, self.backoff)  # positions: before the load
        return Watching(lambda timeout, check: watch.run(collector.on_records, timeout, check), watch.close)

    def latency(self, path: PathUnderTest, rate: float, throughput: float) -> dict[str, Any]:
        count = max(int(rate * self.args.latency_seconds), 20)
        phase = self.send_and_watch(path, f"{path.name}-latency", count, rate, cpu=True)
        latencies = phase.collector.latencies_ms
        sent = phase.last_send - phase.first_send if phase.complete else 0.0
        if rate > throughput:
            note(f"{path.name}: {rate:.0f} msg/s is more than it carried at full speed: a queue builds up")
        if sent > 0 and count / sent < 0.9 * rate:
            note(f"{path.name}: the sender kept only {count / sent:.0f} of {rate:.0f} msg/s")
        figures = {
            # above 1: the path cannot keep up with the latency phase's rate, latency measures a backlog
            "latency_rate_over_throughput": round(rate / throughput, 2),
            "latency_p50_ms": quantile(latencies, 50),
            "latency_p99_ms": quantile(latencies, 99),
            "latency_max_ms": round(max(latencies), 1) if latencies else None,
            "latency_messages": count,
            "latency_seen": len(phase.collector.first_seen),
            "latency_send_rate_msg_s": round(count / sent, 1) if sent > 0 else None,
            # The path's CPU at that steady rate: what batches too small to fill cost (the ingest's per
            # batch, a Kafka transaction and a JMS commit) shows here, not at full speed.
            "latency_cpu_s_per_1000": self.window_figures(phase, count)["cpu_s_per_1000"],
        }
        note(f"{path.name}: latency p50 {figures['latency_p50_ms']} ms, p99 {figures['latency_p99_ms']} ms")
        return figures

    def baseline(self) -> dict[str, Any]:
        """The straight loop, then (for `more`) the journaled straight loop."""
        figures = self.straight("baseline")
        self.journaled = self.straight("journaled", journal="egress.journaled.journal")
        return figures

    def straight(self, name: str, journal: str | None = None) -> dict[str, Any]:
        topic, queue_name = f"egress.{name}", f"bench.{name}"
        self.kafka.create_topics(topic, partitions=self.args.journal_partitions)
        argv = [str(BENCH / "baseline_loop.py"), "--url", self.jms_url(), "--bootstrap", self.kafka.bootstrap]
        argv += ["--queue", queue_name, "--topic", topic]
        if journal is not None:
            self.kafka.create_topics(journal)
            argv += ["--journal", journal]
        return self.run_baseline(topic, queue_name, argv, name)

    def more(self, bridge: dict[str, Any]) -> dict[str, Any]:
        journaled = self.journaled
        return {
            "journaled": journaled,
            "journaled_throughput_ratio": ratio(bridge["throughput_msg_s"], journaled["throughput_msg_s"]),
            "journaled_cpu_per_message_ratio": ratio(bridge["cpu_s_per_1000"], journaled["cpu_s_per_1000"]),
            "journaled_latency_p50_ratio": ratio(bridge["latency_p50_ms"], journaled["latency_p50_ms"]),
        }

    def bridge(self, work: Path, rate: float) -> dict[str, Any]:
        args = self.args
        topic, queue_name = "egress.bridge", "bench.bridge"
        self.kafka.create_topics(topic, partitions=args.journal_partitions)
        sources = [{"queue": queue_name}]
        document = bridge_document(
            "bench",
            self.activemq,
            self.kafka,
            sources,
            args.trigger_ms,
            spark=self.spark_spec(),
            delivery=args.delivery,
        )
        document["spec"]["kafka"]["journalPartitions"] = args.journal_partitions  # `kafka=` is taken
        route = route_document("all", "bench", topic)
        files = [write_yaml(work / "bridge.yaml", document), write_yaml(work / "routes.yaml", route)]
        return self.run_bridge(work, topic, queue_name, files, rate)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    harness_options(parser, "messages")
    # A 10,000-message window lasts 3-4 s here, and the bridge's throughput then varied by 35 % between
    # runs of the same code; over 40,000 (10-12 s) by 14 % (docs/egress.md).
    parser.set_defaults(messages=40_000)
    parser.add_argument("--journal-partitions", type=int, default=1, help="also the destination topics'")
    parser.add_argument("--delivery", choices=["atLeastOnce", "exactlyOnce"], default="atLeastOnce")
    args = parser.parse_args()

    options = {"journal_partitions": args.journal_partitions, "delivery": args.delivery}
    run_and_print("egress", args, Bench, note, MESSAGE_BYTES, options)


if __name__ == "__main__":
    main()
