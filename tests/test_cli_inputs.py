"""Files no command can use end in one line that names the file, never a traceback (`validate` and
`render` as `main` runs them, `job` as a process as a user runs it: it sets up its logging)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from jmsbridge.cli import main
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
def test_one_line_naming_the_file(
    tmp_path: Path, command: str, broken: Callable[[Path], str], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bridge.yaml"
    expected = broken(path)
    if command == "job":
        result = subprocess.run(
            [sys.executable, "-m", "jmsbridge", command, "-f", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        code, out, err = result.returncode, result.stdout, result.stderr
    else:
        code = main([command, "-f", str(path)])  # a traceback would be an exception here
        out, err = capsys.readouterr()
    assert code == 1
    assert "Traceback" not in err
    assert expected in err.splitlines()
    assert out == ""
