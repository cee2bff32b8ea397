"""scripts/repeat.sh: N runs in a row, one line each, stopping at the first that fails."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

FAILS_ON_THE_SECOND_RUN = """
from pathlib import Path

def test_counts():
    runs = Path(__file__).with_name("runs")
    runs.write_text(runs.read_text() + "x" if runs.exists() else "x")
    assert runs.read_text() != "xx"
"""


def test_it_stops_at_the_first_run_that_fails_with_its_status(tmp_path: Path) -> None:
    test_file = tmp_path / "test_twice.py"
    test_file.write_text(FAILS_ON_THE_SECOND_RUN)
    result = subprocess.run(
        [str(REPO / "scripts" / "repeat.sh"), "5", str(test_file)],
        env=os.environ | {"REPEAT_LOGS": str(tmp_path / "logs")},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    lines = result.stdout.splitlines()
    assert result.returncode == 1, result.stdout + result.stderr
    assert [line.split(":")[0] for line in lines] == ["run 1 of 5", "run 2 of 5"]
    assert "1 passed" in lines[0] and "1 failed" in lines[1]
    assert (tmp_path / "runs").read_text() == "xx"
    assert "1 failed" in (tmp_path / "logs" / "2.log").read_text()
