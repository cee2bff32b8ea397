"""Failover benchmark: how long messages stop flowing when the active instance dies, cold vs warm standby.

    python bench/failover.py [--delivery atLeastOnce|exactlyOnce] [--standby both|cold|warm]
                             [--messages 20000] [--rate 250] [--kills 5] [--lease-seconds 10]
                             [--steady-records 1000] [--trigger-ms MS] [--timeout 300]

Run from the repository root after scripts/setup.sh (needs Debian's ActiveMQ, Kafka's jars, pyspark, psutil).
Prints exactly one JSON line on stdout; progress goes to stderr. Takes about 5 minutes per standby kind.

The scenario is the chaos test's (testbed/failover_scenario.py, its docstring says every step): two
instances of one bridge (local Spark, a shared checkpoint directory) compete for the bridge's Lease on
a real Kubernetes API server (jmsbridge/control_plane.py), against ActiveMQ Classic (persistent) and
Apache Kafka started here; a steady load of persistent JMS messages at `--rate` runs throughout, `--messages`
at least.
The active is killed `--kills` times (SIGKILL of its process group, then started again as the next
standby, as Kubernetes restarts a pod), then frozen once (SIGSTOP until the standby took over, then
SIGCONT: a zombie).

Per standby kind, the baseline (`cold`: `jmsbridge job --cold-standby`, the standby starts nothing before
it holds the lease) first, then `warm` (the default: the standby's JVM, Spark session, JMS connection and
journal producer are ready while it waits):

- `gap_p50_s`, `gap_max_s` (and every `gaps_s`): the takeover gap of each kill, from the CreateTime of
  the last record in the destination topic before the kill to that of the first record the new active
  wrote; `kill_to_first_record_s` measures from the kill instead. `freeze_gap_s`: the same for the freeze.
- `lost` (acknowledged by ActiveMQ, never in the topic), `duplicates` (records beyond one per message).
- `zombie`: its exit status, and what it committed to the journal and the topic after the new active had
  written everything (`journal_writes`, `output_writes`; `output_new_messages`: messages only the zombie
  brought, which would mean the new active missed them).
- `epoch_markers`: journal records with the `jmsbridge.epoch` header (one per partition and producer start).
- `unplanned_exits`: instances that stopped on their own (their `jmsbridge stopped:` line); the scenario
  starts them again as Kubernetes would, so a takeover may include such a restart.

With the default lease duration D = 10 s the standby takes over D after the active's last renewal (it
watches the Lease), so 2D/3 to D after a kill, which the scenario makes at a random point of the renewal
period as a crash would come (`kill_to_lease_s`); the gap adds the new active's start
(a warm standby's queries wait at a gate and start planning then; a cold standby also starts the JVM,
Spark session, queries and broker clients). See docs/failover.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "operator")]

from bench.local_run import local_brokers, ratio  # noqa: E402
from jmsbridge.control_plane import ControlPlane  # noqa: E402
from testbed.apiserver.client import KubeApi  # noqa: E402
from testbed.failover_scenario import Failover, FailoverPlan  # noqa: E402

KINDS = {"both": ("cold", "warm"), "cold": ("cold",), "warm": ("warm",)}


def note(text: str) -> None:
    print(f"[failover {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--delivery", choices=["atLeastOnce", "exactlyOnce"], default="atLeastOnce")
    parser.add_argument("--standby", choices=sorted(KINDS), default="both", help="cold is the baseline")
    parser.add_argument("--messages", type=int, default=20_000, help="sent at least, per standby kind")
    parser.add_argument("--rate", type=float, default=250.0, help="persistent JMS messages per second")
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--lease-seconds", type=int, default=10, help="failover.leaseDurationSeconds")
    parser.add_argument("--steady-records", type=int, default=1000, help="written by an active before a kill")
    parser.add_argument(
        "--standby-settled",
        type=float,
        default=None,
        help="seconds stood by before a kill (default: the lease)",
    )
    parser.add_argument("--trigger-ms", type=int, default=None, help="default: the bridge's")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds each wait may take at most")
    args = parser.parse_args()

    stdout, sys.stdout = sys.stdout, sys.stderr  # stdout carries the one JSON line only
    began = time.monotonic()
    runs: dict[str, dict[str, Any]] = {}
    with local_brokers(note) as (activemq, kafka, work), ControlPlane() as plane:
        kube = KubeApi(plane)  # the jobs' Lease on a real API server, as the chart's job ServiceAccount
        for kind in KINDS[args.standby]:
            plan = FailoverPlan(
                delivery=args.delivery,
                cold_standby=kind == "cold",
                messages=args.messages,
                rate=args.rate,
                kills=args.kills,
                lease_seconds=args.lease_seconds,
                steady_records=args.steady_records,
                standby_settled_s=args.lease_seconds
                if args.standby_settled is None
                else args.standby_settled,
                trigger_ms=args.trigger_ms,
                timeout=args.timeout,
            )
            note(f"{kind} standby: {plan}")
            runs[kind] = Failover(plan, activemq, kafka, kube, work, note).run().figures()
            note(f"{kind} standby: {json.dumps(runs[kind])}")
    cold, warm = runs.get("cold", {}), runs.get("warm", {})
    result = {
        "benchmark": "failover",
        "delivery": args.delivery,
        "messages_at_least": args.messages,
        "rate_msg_s": args.rate,
        "lease_duration_s": args.lease_seconds,
        "trigger_ms": args.trigger_ms,
        "cpu_count": os.cpu_count(),
        "baseline_cold": cold or None,
        "warm": warm or None,
        "gap_p50_ratio": ratio(warm.get("gap_p50_s"), cold.get("gap_p50_s")),
        "gap_max_ratio": ratio(warm.get("gap_max_s"), cold.get("gap_max_s")),
        "elapsed_s": round(time.monotonic() - began, 1),
    }
    print(json.dumps(result), file=stdout, flush=True)


if __name__ == "__main__":
    main()
