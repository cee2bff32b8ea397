"""The suite's own scheduling: `--dist loadgroup` (scripts/test.sh) runs the tests of one `xdist_group` on
one worker, with this interpreter's pytest and pytest-xdist.

The heaviest scenarios share a group (`ONE_AT_A_TIME`, testbed/harness.py) so that two of them never
load both cores at once, and a module's costly fixture is made once. With pytest 9.2 and pytest-xdist 3.8
no group held (pytest-xdist#1386): every run spread them over both workers, silently.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GROUPED = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("i", range(6))
def test_one(i):
    with open("workers.txt", "a") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n2", "--dist=loadgroup"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    workers = (tmp_path / "workers.txt").read_text().split()
    assert len(workers) == 6
    assert len(set(workers)) == 1, (
        f"one group ran on {sorted(set(workers))}: this pytest-xdist does not group with this pytest "
        "(pytest-xdist#1386); pyproject.toml's test extra pins a pytest that works"
    )
