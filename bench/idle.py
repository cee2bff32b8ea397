"""Idle benchmark: what a bridge job with no traffic costs, in real-time mode against micro-batch mode.

    python bench/idle.py [--seconds 60] [--settle-seconds 30] [--task-interval-seconds N]

Run from the repository root after scripts/setup.sh (needs Debian's ActiveMQ, Kafka's jars, pyspark, psutil).
Prints exactly one JSON line on stdout; progress goes to stderr. Takes about three minutes.

For each mode (`spark.mode`), one `jmsbridge job` (jmsbridge.local.BridgeJob) on local brokers started
here, with one JMS queue source and route to a topic (the egress query) and one kafkaToJms route (the
ingress query), so that both queries run their tasks. Once the job logs that it runs, and
`--settle-seconds` more (Spark starts its Python workers and the first interval's tasks), the CPU seconds
of the job's process tree (driver, Spark's JVM, Python workers) and of each broker's tree are sampled
(bench/cpu.py) for `--seconds`: figures are cores busy (CPU seconds / window). Nothing is sent.

The first interval boundaries after a start cost more than later ones (the JVM compiles Spark's planning
code): `--settle-seconds 90` measures past the first one, as a bridge idle for hours runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cpu import CpuSampler, Root
from bench.local_run import TASK_INTERVAL_SECONDS, bridge_document, local_brokers, notes
from jmsbridge.kafka_server import KafkaBroker
from jmsbridge.local import ActiveMqBroker, BridgeJob, free_port
from testbed.harness import route_document, to_jms_route, write_yaml

note = notes("idle")


def idle_job(
    activemq: ActiveMqBroker, kafka: KafkaBroker, work: Path, mode: str, args: argparse.Namespace
) -> dict[str, Any]:
    name = f"idle-{mode.lower()}"
    out, back = f"{name}.out", f"{name}.back"
    kafka.create_topics(out, back)
    spark: dict[str, Any] = {"mode": mode}
    if args.task_interval_seconds is not None:
        spark["taskIntervalSeconds"] = args.task_interval_seconds
    document = bridge_document(name, activemq, kafka, [{"queue": f"{name}.in"}], None, spark=spark)
    routes = [
        route_document("out", name, out),
        to_jms_route("back", name, back, {"queue": f"{name}.back"}),
    ]
    work.mkdir(parents=True, exist_ok=True)
    files = [write_yaml(work / "bridge.yaml", document), write_yaml(work / "routes.yaml", *routes)]
    # `--metrics`: served as in a cluster (`telemetry.port`): the lag is read and the tasks report live.
    job = BridgeJob(files, work, metrics_port=free_port() if args.metrics else 0).start()
    try:
        job.wait_running(timeout=300)
        time.sleep(args.settle_seconds)  # a benchmark's fixed warm-up, not a test's wait
        assert job.process is not None and job.process.poll() is None, job.log()[-3000:]
        groups = {
            "job": [Root(job.process.pid)],
            "activemq": [Root(activemq.process.pid)] if activemq.process else [],
            "kafka": [Root(kafka.process.pid)] if kafka.process else [],
        }
        note(f"{mode}: sampling {args.seconds:.0f} s of an idle job")
        sampler = CpuSampler(groups).start()
        time.sleep(args.seconds)
        used = sampler.stop()
        window = sampler.seconds
        figures: dict[str, Any] = {f"{g}_cores": round(u.cpu_s / window, 4) for g, u in used.items()}
        figures["job_processes_cpu_s"] = {k: round(v, 2) for k, v in used["job"].by_label().items()}
        note(f"{mode}: job {figures['job_cores']} cores, Kafka {figures['kafka_cores']} cores")
        return figures
    finally:
        job.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="the sampled window")
    parser.add_argument("--settle-seconds", type=float, default=30.0, help="after the job runs, before")
    parser.add_argument(
        "--task-interval-seconds", type=int, help="realTime: spark.taskIntervalSeconds (the bridge's default)"
    )
    parser.add_argument("--metrics", action="store_true", help="serve the job's metrics, as in a cluster")
    args = parser.parse_args()
    stdout, sys.stdout = sys.stdout, sys.stderr
    with local_brokers(note) as (activemq, kafka, work):
        real_time = idle_job(activemq, kafka, work / "real-time", "realTime", args)
        micro_batch = idle_job(activemq, kafka, work / "micro-batch", "microBatch", args)
    result = {
        "benchmark": "idle",
        "seconds": args.seconds,
        "settle_seconds": args.settle_seconds,
        "task_interval_seconds": args.task_interval_seconds or TASK_INTERVAL_SECONDS,
        "metrics_served": args.metrics,
        "cpu_count": os.cpu_count(),
        "real_time": real_time,
        "micro_batch": micro_batch,
        "job_cores_ratio": round(real_time["job_cores"] / max(micro_batch["job_cores"], 1e-9), 3),
    }
    print(json.dumps(result), file=stdout, flush=True)


if __name__ == "__main__":
    main()
