"""`jmsbridge job`: run the bridge job (ingest and egress query) from resource YAML or a rendered config."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from jmsbridge.files import add_file_argument


def register(commands: Any) -> None:
    job = commands.add_parser(
        "job",
        help="run the bridge job",
        description="Run the bridge job from JmsBridge/JmsBridgeRoute YAML (or a rendered job config).",
    )
    add_file_argument(
        job, "a YAML file with the JmsBridge and its JmsBridgeRoutes, or the rendered job config",
        "--file", "--config",
    )  # fmt: skip
    job.add_argument("--master", help="Spark master, e.g. local[2] (default: from spark-submit)")
    job.add_argument(
        "--checkpoint", type=Path,
        help="checkpoint directory (default: under spark-submit, spark.checkpoint.path/<bridgeId>; run "
        "locally, checkpoints/<bridgeId> in --work-dir, else next to the first config file)",
    )  # fmt: skip
    job.add_argument(
        "--work-dir",
        type=Path,
        help="where the rendered config is kept (default: a temp dir, removed when the job ends)",
    )
    job.add_argument("--instance", default="a", help="instance name (active/standby pair member)")
    job.add_argument("--metrics-port", type=int, help="Prometheus port (default: telemetry.port; 0: off)")
    job.add_argument("--available-now", action="store_true", help="process what the journal holds, then stop")
    job.add_argument(
        "--conf", dest="spark_conf", action="append", default=[], type=spark_setting, metavar="KEY=VALUE",
        help="a Spark setting for the job's session, as with spark-submit (repeatable); extraJavaOptions are "
        "added to the job's own",
    )  # fmt: skip
    job.add_argument(
        "--no-lease", dest="lease", action="store_false",
        help="run as the active instance without the Kubernetes lease, even when the config names a "
        "namespace and failover.standby (local runs)",
    )  # fmt: skip
    job.add_argument(
        "--cold-standby", action="store_true",
        help="as a standby, start nothing (Spark, JMS and Kafka clients) before holding the lease; "
        "the default warm standby takes over faster (for measuring the difference)",
    )  # fmt: skip
    job.set_defaults(run=run)


def spark_setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.startswith("spark."):
        raise argparse.ArgumentTypeError(f"{text!r} is not spark.KEY=VALUE")
    return key, value


def local_checkpoints(args: argparse.Namespace) -> Path | None:
    """Where a local run keeps its checkpoints, in sight of the user: in its work dir, else next to its
    config, never a machine-wide directory that every later run of a bridge with that id would share.
    Under spark-submit (the operator's SparkApplications) the config's spark.checkpoint.path applies."""
    if args.checkpoint is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return None
    base: Path = args.work_dir if args.work_dir is not None else args.files[0].parent
    return base.absolute() / "checkpoints"


def run(args: argparse.Namespace) -> int:
    from bridge_job.supervision.runner import JobOptions
    from bridge_job.supervision.runner import run as run_job

    return run_job(
        JobOptions(
            config_paths=args.files,
            master=args.master,
            checkpoint=args.checkpoint,
            checkpoints_dir=local_checkpoints(args),
            work_dir=args.work_dir,
            instance=args.instance,
            available_now=args.available_now,
            metrics_port=args.metrics_port,
            lease=args.lease,
            cold_standby=args.cold_standby,
            spark_conf=tuple(args.spark_conf),
        )
    )
