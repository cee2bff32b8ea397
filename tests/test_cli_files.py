"""The file flag of every command that reads resource files (jmsbridge/files.py): one spelling,
`-f/--filename`, standard input with `-f -` and a directory with `-f DIR`."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from jmsbridge.cli import main, parser
from tests.operator.helpers import EXAMPLES

FILE_COMMANDS = ["job", "reset-checkpoint", "render", "validate"]
REQUIRED = {"reset-checkpoint": ["--to", "latest"]}  # the other required options


def subcommands() -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def file_flags(command: str) -> list[str]:
    (flags,) = [a.option_strings for a in subcommands()[command]._actions if a.dest == "files"]
    return list(flags)


def test_every_command_that_reads_files_spells_the_flag_as_kubectl() -> None:
    reading = [name for name, sub in subcommands().items() if any(a.dest == "files" for a in sub._actions)]
    assert sorted(reading) == sorted(FILE_COMMANDS)
    for command in FILE_COMMANDS:
        assert file_flags(command)[:2] == ["-f", "--filename"], command
    # The older spellings stay: --config is what every SparkApplication passes.
    assert file_flags("job") == ["-f", "--filename", "--file", "--config"]
    assert file_flags("reset-checkpoint") == ["-f", "--filename", "--file", "--config"]


@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_a_directory_means_its_yaml_and_json_files(command: str, tmp_path: Path) -> None:
    for name in ("b.yaml", "a.yml", "c.json", "notes.txt"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "d.yaml").write_text("{}")
    args = parser().parse_args([command, "-f", str(tmp_path), *REQUIRED.get(command, [])])
    assert args.files == [tmp_path / "a.yml", tmp_path / "b.yaml", tmp_path / "c.json"]


Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture()
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Run:
    """`jmsbridge ARGV` in this process, `stdin` its standard input: its exit code and output (the command
    as a process, from its console script: tests/formats/test_cli.py)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where `-f -` keeps what it read

    def run(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
        try:
            code = main(list(argv))
        except SystemExit as exit:  # argparse's refusals
            code = exit.code if isinstance(exit.code, int) else 1
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(list(argv), code, out, err)

    return run


def test_validate_and_render_read_standard_input_and_directories(run: Run) -> None:
    both = "\n---\n".join((EXAMPLES / name).read_text() for name in ("bridge.yaml", "routes.yaml"))
    from_stdin = run("validate", "-f", "-", stdin=both)
    from_files = run("validate", "-f", str(EXAMPLES / "bridge.yaml"), "-f", str(EXAMPLES / "routes.yaml"))
    assert (from_stdin.returncode, from_stdin.stdout) == (0, from_files.stdout), from_stdin.stderr
    rendered = run("render", "-f", "-", stdin=both)
    assert rendered.returncode == 0 and "kind: SparkApplication" in rendered.stdout, rendered.stderr
    from_directory = run("validate", "--filename", str(EXAMPLES))
    assert from_directory.returncode == 0 and from_directory.stdout.startswith("ok: 1 JmsBridge")


def test_standard_input_once_and_an_empty_directory_are_refused(run: Run, tmp_path: Path) -> None:
    twice = run("validate", "-f", "-", "-f", "-")
    assert twice.returncode == 2 and "standard input (-) can be given once" in twice.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("validate", "-f", str(empty))
    assert result.returncode == 2 and f"{empty}: no .yaml, .yml, .json file" in result.stderr


@pytest.mark.parametrize("command", ["job", "reset-checkpoint"])
def test_commands_that_follow_their_files_get_standard_input_as_one(
    command: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"kind: JmsBridge\n")))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # its atexit removal needs a process's end
    args = parser().parse_args([command, "-f", "-", *REQUIRED.get(command, [])])
    (path,) = args.files
    assert path.read_bytes() == b"kind: JmsBridge\n"  # a file: the job re-reads it when it changes
