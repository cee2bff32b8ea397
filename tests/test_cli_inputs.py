"""Files no command can use end in one line that names the file, never a traceback (`validate`, `render`,
`job`, each run as a process as a user runs it)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.supervision.test_config_errors import BRIDGE


def latin1(path: Path) -> str:
    path.write_bytes(BRIDGE.replace("orders.in", "caf\xe9").encode("latin-1"))
    return f"{path}: not UTF-8 text (byte 0xe9 at offset {BRIDGE.index('orders.in') + 3}); save it as UTF-8"


def deep(path: Path) -> str:
    path.write_text("spec: " + "[" * 5000 + "]" * 5000 + "\n")
    return f"{path}:1:70: not valid YAML: nested deeper than 64 levels"


def duplicate_key(path: Path) -> str:
    path.write_text(BRIDGE.replace("  jms:\n", "  suspend: true\n  jms:\n") + "  suspend: false\n")
    return f"{path}:10:3: not valid YAML: key 'suspend' given twice (first on line 5); keep one"


@pytest.mark.parametrize("command", ["validate", "render", "job"])
@pytest.mark.parametrize("broken", [latin1, deep, duplicate_key])
def test_one_line_naming_the_file(tmp_path: Path, command: str, broken: Callable[[Path], str]) -> None:
    path = tmp_path / "bridge.yaml"
    expected = broken(path)
    result = subprocess.run(
        [sys.executable, "-m", "jmsbridge", command, "-f", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert expected in result.stderr.splitlines()
    assert result.stdout == ""
