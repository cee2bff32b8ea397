"""`--share-brokers` (tests/support/shared_servers.py): every worker of a run gets the same broker, and the
broker is gone when the run ends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.brokers import port_open

pytestmark = pytest.mark.slow  # starts pytest-xdist workers and a broker: the quick lane's own mechanism

REPO = Path(__file__).resolve().parents[1]

SEEN = """
import os


def test_the_broker(activemq):
    with open("seen.txt", "a") as out:
        out.write(f"{os.environ['PYTEST_XDIST_WORKER']} {activemq.port} {activemq.workdir}\\n")
"""


def run(tmp_path: Path, *options: str) -> list[list[str]]:
    (tmp_path / "test_seen.py").write_text(SEEN)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [*command, "-n", "2", "--dist", "each", *options],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line.split() for line in (tmp_path / "seen.txt").read_text().splitlines()]


def test_the_workers_share_one_broker_which_ends_with_the_run(tmp_path: Path) -> None:
    seen = run(tmp_path, "--share-brokers")
    assert sorted(worker for worker, _, _ in seen) == ["gw0", "gw1"]
    ((port, workdir),) = {(port, workdir) for _, port, workdir in seen}
    assert not port_open(int(port)) and not Path(workdir).exists()


def test_without_the_option_each_worker_has_its_own(tmp_path: Path) -> None:
    seen = run(tmp_path)
    assert len({port for _, port, _ in seen}) == 2
