"""The bridge's key and its MACs (bridge_job/signing.py)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

from bridge_job.signing import KEY_ENV, MADE_ENV, Forgeries, bridge_key, mac, verify


def test_the_key_comes_from_the_environment() -> None:
    assert bridge_key() == os.environ[KEY_ENV].encode()


def test_without_a_key_a_job_makes_one_on_import_that_the_processes_it_starts_share() -> None:
    """As a local run's driver: it imports the bridge's modules, then starts Spark's JVM, which starts the
    Python workers that sign and verify."""
    driver = """
import subprocess, sys
from bridge_job.signing import bridge_key
worker = "from bridge_job.signing import bridge_key; print(bridge_key().decode())"
print(bridge_key().decode())
print(subprocess.run([sys.executable, "-c", worker], capture_output=True, text=True, check=True).stdout)
"""
    env = {k: v for k, v in os.environ.items() if k not in (KEY_ENV, MADE_ENV)}
    run = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, check=True, env=env)
    made, inherited = run.stdout.split()
    assert len(made) >= 32 and inherited == made
    assert f"{KEY_ENV} is not set" in run.stderr


def test_a_mac_signs_its_parts_and_where_one_ends() -> None:
    given = mac(b"k", b"ab", b"c")
    assert len(given) == 22 and verify(b"k", given, b"ab", b"c")
    assert not verify(b"k", given, b"a", b"bc")  # the same bytes, cut elsewhere
    assert not verify(b"other", given, b"ab", b"c")
    assert not verify(b"k", "", b"ab", b"c")


def test_forgeries_are_logged_once_per_period_with_how_many(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    forgeries = Forgeries("forged marks", every=60, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, "jmsbridge.signing"):
        for _ in range(1000):
            forgeries.seen("a flood")
        now[0] += 61
        forgeries.seen("the next")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "forged marks: a flood (1 seen since the last such line)",
        "forged marks: the next (1000 seen since the last such line)",
    ]
    assert forgeries.seen_total == 1001
