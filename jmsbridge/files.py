"""The file flag every command that reads resource files shares: `-f/--filename`, as kubectl spells it.

`-f FILE` as given; `-f DIR` the directory's `.yaml`, `.yml` and `.json` files, in name order (not its
subdirectories, as kubectl without `-R`); `-f -` standard input, kept in a file of its own for the run
(the job follows its config files as they change, and error messages name a file).
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"


def add_file_argument(parser: argparse.ArgumentParser, help: str, *aliases: str) -> None:
    """`-f/--filename` (repeatable, required) into `args.files`; `aliases`: older spellings kept."""
    parser.add_argument(
        "-f", "--filename", *aliases, dest="files", action=Files, required=True, metavar="FILE",
        help=f"{help}; a directory: its .yaml, .yml and .json files; -: standard input (repeatable)",
    )  # fmt: skip


class Files(argparse.Action):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stdin_read = False

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        value: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        files: list[Path] = list(getattr(namespace, self.dest, None) or [])
        text = str(value)
        if text == STDIN:
            if self.stdin_read:
                raise argparse.ArgumentError(self, "standard input (-) can be given once")
            self.stdin_read = True
            files.append(stdin_file())
        elif Path(text).is_dir():
            found = sorted(p for p in Path(text).iterdir() if p.suffix in SUFFIXES and p.is_file())
            if not found:
                raise argparse.ArgumentError(self, f"{text}: no {', '.join(SUFFIXES)} file in this directory")
            files += found
        else:
            files.append(Path(text))
        setattr(namespace, self.dest, files)


def stdin_file() -> Path:
    """Standard input, read to its end, in a file removed when the process exits."""
    directory = Path(tempfile.mkdtemp(prefix="jmsbridge-stdin-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    path = directory / "stdin.yaml"
    path.write_bytes(sys.stdin.buffer.read())
    return path
