"""Spark start benchmark: what a local Spark session's start costs with the class-data archive that local
runs map (jmsbridge/class_archive.py) against the same start without it, in the same run.

    python bench/spark_start.py [--rounds 3]

Run from the repository root after scripts/setup.sh (it made the archive). Prints exactly one JSON line on
stdout. Takes about a minute.

Each start is a process of its own that builds a session with the job's Spark settings (the JIT on C1, as
the job runs), runs one small query, and reports the CPU seconds of Spark's JVM and the wall time from
the builder to the query's answer. Rounds alternate with and without the archive, so that a busy moment of
a shared machine falls on both; the figures are medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jmsbridge import class_archive

ONE_START = """
import json, sys, time
import psutil
from pyspark.sql import SparkSession
from bridge_job.config.spark_settings import SPARK_SETTINGS, with_command_line
given = [("spark.driver.extraJavaOptions", sys.argv[1])] if sys.argv[1] else []
began = time.monotonic()
builder = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
for name, value in with_command_line(SPARK_SETTINGS, given).items():
    builder = builder.config(name, value)
spark = builder.getOrCreate()
spark.range(1000).selectExpr("id % 7 AS k").groupBy("k").count().collect()
wall = time.monotonic() - began
jvm = psutil.Process(spark.sparkContext._gateway.proc.pid)
cpu = sum(p.cpu_times().user + p.cpu_times().system for p in [jvm, *jvm.children(recursive=True)])
spark.stop()
print(json.dumps({"jvm_cpu_s": round(cpu, 2), "wall_s": round(wall, 2)}))
"""


def one_start(options: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", ONE_START, options], capture_output=True, text=True, timeout=300, check=True
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(statistics.median(run[key] for run in runs), 2) for key in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    archive = class_archive.jvm_options()
    if not archive:
        raise SystemExit("no class-data archive: run scripts/setup.sh (python -m jmsbridge.class_archive)")
    mapped, plain = [], []
    for _ in range(args.rounds):
        mapped.append(one_start(archive))
        plain.append(one_start(""))
    with_archive, without = medians(mapped), medians(plain)
    result = {
        "benchmark": "spark_start",
        "rounds": args.rounds,
        "with_archive": with_archive,
        "without_archive": without,
        "jvm_cpu_ratio": round(with_archive["jvm_cpu_s"] / without["jvm_cpu_s"], 3),
        "wall_ratio": round(with_archive["wall_s"] / without["wall_s"], 3),
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
