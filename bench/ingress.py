"""Ingress benchmark: Kafka -> JMS through the bridge job, against a plain loop, in the same run.

    python bench/ingress.py [--messages 10000] [--latency-seconds 15] [--partitions 1] [--trigger-ms MS]
                            [--max-records-per-batch N] [--warmup-messages 1000] [--baseline-batch 500]
                            [--poll-backoff-ms 5] [--timeout 600]

Run from the repository root after scripts/setup.sh (needs Debian's ActiveMQ, Kafka's jars, pyspark, psutil).
Prints exactly one JSON line on stdout; progress goes to stderr. Takes a few minutes.

Both paths run against the same brokers, started here: ActiveMQ Classic with its persistent store and
Apache Kafka (one KRaft node), with the same clients (confluent-kafka, the project's JPype JMS adapter), and
send the same messages: each record converted as a `native` route converts a plain producer's record (a
TextMessage, the `jms.*` headers as properties, the Kafka coordinates and key), sent persistent.

- baseline (bench/ingress_baseline.py, its own process): a confluent-kafka consumer of the topic and one
  transacted JMS session, committed after every `--baseline-batch` messages (and after each read);
- bridge: `jmsbridge job` with one `kafkaToJms` route (`startingOffsets: earliest`, `send.deliveryMode:
  persistent`) through `jmsbridge.local.BridgeJob`, with the bridge's defaults (500 ms trigger,
  `spark.maxRecordsPerBatch` 20,000) unless an option overrides them. The topic has `--partitions`
  partitions: the bridge runs one task per partition with records in a batch. The bridge's JMS source
  is an idle queue (a bridge needs one).

For each path, baseline first:

1. Start the path and wait until it runs (the job's ` running: ` log line; the loop's ready line).
2. Warm-up: `--warmup-messages` produced as in 3. and awaited on the queue, not counted (the bridge's
   first micro-batch starts PySpark's workers and their JMS connections). `--warmup-messages 0`: none.
3. Throughput, steady flow: a producer process (bench/kafka_sender.py, connected beforehand) produces N
   1 KB records at full speed, keyed by their sequence number (spread over the partitions). The window
   runs from its first send to the moment the JMS consumer of the destination queue has received the
   last of the N distinct messages (by their `seq` property). Throughput = N / window; `sender_msg_s`
   is how fast the producer went.
4. CPU over that window (bench/cpu.py, psutil, sampled every 0.5 s), as bench/egress.py reports it: the
   path's process tree (the job's driver python with its ingest JVM, Spark's JVM, PySpark's python
   daemon and workers with their JMS JVMs; or the loop), the ActiveMQ tree and the Kafka broker's JVM ("path
   total"), as CPU seconds per 1,000 messages, cores busy and shares, and how many processes of each
   kind used 50 ms or more (`path_processes_busy`). The load generator (the producer process, and this
   process, which receives from the queue) is reported apart and not counted.
5. Latency: records produced at a fixed rate, 50 % of the baseline's measured throughput, for
   `--latency-seconds`; latency = the time the JMS consumer received the message - the record's
   timestamp (its `KafkaTimestamp` property, set by both paths). p50, p99 and max.
   `latency_rate_over_throughput` above 1 means the path cannot carry that rate.

The JMS consumer (bench/queue_watch.py) runs in this process, on a raw JMS connection, and stamps each
message as `receive()` hands it over (DUPS_OK acknowledgement: it keeps up with either path).

For the bridge, the `ingress batch {json}` lines the job logs for the throughput window (`batches`) and
the latency phase (`latency_batches`) give the number of micro-batches, the records they carried, the
medians of their duration and tasks, and the bridge's own latency figure (record timestamp -> JMS
commit, averaged per batch).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.local_run import (
    BENCH,
    Child,
    Collected,
    Harness,
    PathUnderTest,
    Phase,
    Watching,
    batch_lines,
    bridge_document,
    harness_options,
    logged_up_to,
    median,
    notes,
    quantile,
    run_and_print,
)
from bench.queue_watch import Collector, QueueWatch
from bench.raw_jms import connect
from jmsbridge.kafka_server import KafkaBroker
from jmsbridge.local import ActiveMqBroker
from testbed.harness import to_jms_route, write_yaml

MESSAGE_BYTES = 1024


note = notes("ingress")


def ingress_batches(log: Path, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
    """The job's `ingress batch {json}` lines (local_run.batch_lines also matches the egress ones,
    which carry no `sent`)."""
    return [b for b in batch_lines(log, start, end) if "sent" in b]


def batch_figures(batches: list[dict[str, Any]]) -> dict[str, Any]:
    def numbers(key: str) -> list[float]:
        return [float(b[key]) for b in batches if isinstance(b.get(key), int | float)]

    durations = numbers("duration_seconds")
    return {
        "count": len(batches),
        "records": int(sum(numbers("records"))),
        "median_records": median(numbers("records")),
        "median_tasks": median(numbers("tasks")),
        "median_duration_s": median(durations),
        "max_duration_s": round(max(durations), 3) if durations else None,
        "median_latency_avg_s": median(numbers("latency_avg_seconds")),
        "retries": int(sum(numbers("retries"))),
    }


class Bench(Harness):
    name = "ingress"
    load_words = ("producing", "records")
    arrival = "message"

    def __init__(self, args: argparse.Namespace, activemq: ActiveMqBroker, kafka: KafkaBroker) -> None:
        super().__init__(args, activemq, kafka)
        self.connection = connect(activemq.url)  # this process's JMS consumer's

    def close(self) -> None:
        self.connection.close()

    def destination(self, path: PathUnderTest) -> str:
        return path.queue

    def logged_records(self, log: Path, start: int, end: int) -> int:
        return sum(int(b.get("records", 0)) for b in ingress_batches(log, start, end))

    def batch_figures(self, log: Path, start: int, end: int) -> dict[str, Any]:
        return batch_figures(ingress_batches(log, start, end))

    def window_figures(self, phase: Phase, messages: int) -> dict[str, Any]:
        figures = super().window_figures(phase, messages)
        assert phase.uses is not None
        # How many processes of each kind did the work (a task on a fresh Python worker starts a JVM)
        busy = [p.label for p in phase.uses["path"].processes if p.used >= 0.05]
        figures["path_processes_busy"] = {label: busy.count(label) for label in sorted(set(busy))}
        return figures

    def load(self, path: PathUnderTest, count: int, run: str, rate: float) -> Child:
        argv = [str(BENCH / "kafka_sender.py"), "--bootstrap", self.kafka.bootstrap, "--topic", path.topic]
        argv += ["--count", str(count), "--run", run, "--rate", str(rate)]
        child = Child(f"sender {run}", argv)
        child.wait_ready()
        return child

    def collector(self, run: str, count: int) -> Collector:
        return Collector(run, count)

    def watch(self, path: PathUnderTest, collector: Collected) -> Watching:
        assert isinstance(collector, Collector)
        watch = QueueWatch(self.connection, path.queue)
        return Watching(lambda timeout, check: watch.run(collector.on_arrival, timeout, check), watch.close)

    def latency(self, path: PathUnderTest, rate: float, throughput: float) -> dict[str, Any]:
        count = max(int(rate * self.args.latency_seconds), 20)
        log_start = path.job_log.stat().st_size if path.job_log is not None else 0
        phase = self.send_and_watch(path, f"{path.name}-latency", count, rate)
        latencies = phase.collector.latencies_ms
        sent = phase.last_send - phase.first_send if phase.complete else 0.0
        if sent > 0 and count / sent < 0.9 * rate:
            note(f"{path.name}: the producer kept only {count / sent:.0f} of {rate:.0f} msg/s")
        figures: dict[str, Any] = {
            # above 1: the path cannot keep up with the latency phase's rate, latency measures a backlog
            "latency_rate_over_throughput": round(rate / throughput, 2),
            "latency_p50_ms": quantile(latencies, 50),
            "latency_p99_ms": quantile(latencies, 99),
            "latency_max_ms": round(max(latencies), 1) if latencies else None,
            "latency_mean_ms": round(statistics.fmean(latencies), 1) if latencies else None,
            "latency_messages": count,
            "latency_seen": len(phase.collector.first_seen),
            "latency_duplicates": phase.collector.duplicates,
            "latency_send_rate_msg_s": round(count / sent, 1) if sent > 0 else None,
        }
        if path.job_log is not None:
            logged = self.args.warmup_messages + self.args.messages + count
            log_end = logged_up_to(path.job_log, logged, self.logged_records)
            figures["latency_batches"] = self.batch_figures(path.job_log, log_start, log_end)
        note(f"{path.name}: latency p50 {figures['latency_p50_ms']} ms, p99 {figures['latency_p99_ms']} ms")
        return figures

    def baseline(self) -> dict[str, Any]:
        topic, queue_name = "ingress.baseline", "bench.ingress.baseline"
        self.kafka.create_topics(topic, partitions=self.args.partitions)
        argv = [
            str(BENCH / "ingress_baseline.py"),
            "--url",
            self.jms_url(),
            "--bootstrap",
            self.kafka.bootstrap,
        ]
        argv += ["--topic", topic, "--queue", queue_name, "--batch", str(self.args.baseline_batch)]
        argv += ["--poll-backoff-ms", str(self.args.poll_backoff_ms)]
        return self.run_baseline(topic, queue_name, argv)

    def bridge(self, work: Path, rate: float) -> dict[str, Any]:
        args = self.args
        topic, queue_name = "ingress.bridge", "bench.ingress.bridge"
        self.kafka.create_topics(topic, partitions=args.partitions)
        sources = [{"queue": "bench.idle"}]
        document = bridge_document(
            "bench", self.activemq, self.kafka, sources, args.trigger_ms, spark=self.spark_spec()
        )
        route = to_jms_route(
            "to-jms", "bench", topic, {"queue": queue_name}, send={"deliveryMode": "persistent"}
        )
        files = [write_yaml(work / "bridge.yaml", document), write_yaml(work / "routes.yaml", route)]
        return self.run_bridge(work, topic, queue_name, files, rate)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    harness_options(parser, "records")
    parser.add_argument("--partitions", type=int, default=1, help="the topics' partitions: parallel tasks")
    parser.add_argument("--baseline-batch", type=int, default=500, help="messages per baseline JMS commit")
    args = parser.parse_args()

    options = {"partitions": args.partitions, "baseline_batch": args.baseline_batch}
    run_and_print("ingress", args, Bench, note, MESSAGE_BYTES, options)


if __name__ == "__main__":
    main()
