"""`jmsbridge reset-checkpoint`: start a bridge again from a stated position after a checkpoint mismatch.

A checkpoint is bound to the topics it indexes (bridge_job/spark/binding.py); when they were recreated,
the job stops rather than skip or drop anything. This command is the way forward the user chooses: it
moves the checkpoint aside (`<checkpoint>.before-reset-<time>`, nothing is deleted) and writes where the
egress and ingress queries begin: `earliest` (what the topics hold now is replayed), `committed` (the
reader groups' committed offsets) or `latest` (what they hold now is skipped); it prints, per partition,
what is replayed or skipped (bridge_job/supervision/checkpoints.py says how). Run it with the job stopped;
under the operator, annotate the JmsBridge instead (`jmsbridge.dev/reset-checkpoint`).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from bridge_job.config.job import CHECKPOINT_POSITIONS
from jmsbridge.files import add_file_argument


def register(commands: Any) -> None:
    reset = commands.add_parser(
        "reset-checkpoint",
        help="start a bridge again from a stated position (after a checkpoint mismatch)",
        description=__doc__.splitlines()[0],
    )
    what = "the bridge's YAML (JmsBridge and JmsBridgeRoutes) or its rendered job config"
    add_file_argument(reset, what, "--file", "--config")
    reset.add_argument(
        "--checkpoint", type=Path,
        help="checkpoint directory (default: as `jmsbridge job` with the same --work-dir)",
    )  # fmt: skip
    reset.add_argument("--work-dir", type=Path, help="the work dir `jmsbridge job` was given, if any")
    reset.add_argument(
        "--to", dest="position", choices=CHECKPOINT_POSITIONS, required=True, help="where to start"
    )
    reset.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from bridge_job.config import ConfigError
    from bridge_job.config.rendered import RenderedConfig
    from bridge_job.kafka.waiting import asking
    from bridge_job.supervision.checkpoints import reset_checkpoint
    from jmsbridge.job_cli import local_checkpoints

    try:
        with tempfile.TemporaryDirectory(prefix="jmsbridge-reset-") as work_dir:
            config = RenderedConfig(args.files, Path(work_dir)).config
    except ConfigError as error:
        print(f"invalid configuration:\n{error}")
        return 1
    checkpoints = local_checkpoints(args) or Path(config.bridge.spark.checkpoint.path)
    checkpoint: Path = args.checkpoint or checkpoints / config.bridge_id
    # Kafka waited out as the job waits it (a group coordinator still loading, a broker restarting).
    for line in asking(config, "resetting", lambda: reset_checkpoint(config, checkpoint, args.position)):
        print(line)
    print(f"checkpoint {checkpoint} reset to {args.position}: start the bridge again")
    return 0
