"""`jmsbridge <command>`: each command lives in its own module and registers itself here.

Commands import their heavy dependencies (Spark, kopf, JPype) only when they run, so that
`jmsbridge decode` on a laptop does not start a JVM.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bridge_job import __version__
from jmsbridge import checkpoint_cli, codec_cli, demo, job_cli, operator_cli


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="jmsbridge", description=__doc__.splitlines()[0])
    root.add_argument("--version", action="version", version=f"jmsbridge {__version__}")
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (job_cli, checkpoint_cli, demo, operator_cli, codec_cli):
        module.register(commands)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except KeyboardInterrupt:
        return 130
    sys.stdout.flush()
    return code
