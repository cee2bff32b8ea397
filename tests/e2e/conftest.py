"""A failed end-to-end test reports what its bridge jobs logged: a CI run shows only the failure's text,
and a timeout alone ("waiting for all 3000 records") does not say whether the job stopped, waited out an
outage or never saw a record."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from jmsbridge.local import BridgeJob

# Lines of the job's own loggers; librdkafka's connection refusals during an outage are left out.
_OWN = ("jmsbridge.", "bridge_job.", "Traceback", "Error:", "jmsbridge stopped")
_NOISE = ("Connect to ipv4", "brokers are down")
TAIL_LINES = 80
BROKER_LINES = 40


def job_log_tails(work_dir: Path) -> str:
    """The end of what each job under `work_dir` logged of its own, a section per log file."""
    sections = []
    for log in sorted(work_dir.rglob("job*.log")):
        lines = log.read_text(errors="replace").splitlines()
        own = [
            line[:400]
            for line in lines
            if any(t in line for t in _OWN) and not any(n in line for n in _NOISE)
        ]
        sections.append(
            f"--- {log.relative_to(work_dir)} ({len(lines)} lines, its last {TAIL_LINES} own ones):"
        )
        sections.extend(own[-TAIL_LINES:])
    return "\n".join(sections)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    tails = "\n".join(job_log_tails(d) for d in sorted(work_dirs(getattr(item, "funcargs", {}))))
    if tails.strip():
        report.sections.append(("bridge job logs", tails))
    brokers = broker_log_tails(getattr(item, "funcargs", {}))
    if brokers:
        report.sections.append(("the test's own brokers' logs", brokers))


def broker_log_tails(funcargs: dict[str, Any]) -> str:
    """The end of the log of each broker of the test's own (`own_*`, a broker it stops, kills or freezes):
    whether it stopped, came back, or refused what the job asked."""
    sections = []
    for name, value in sorted(funcargs.items()):
        if name.startswith("own_") and callable(getattr(value, "log", None)):
            lines = str(value.log()).splitlines()
            sections.append(f"--- {name} ({len(lines)} lines, its last {BROKER_LINES}):")
            sections.extend(line[:300] for line in lines[-BROKER_LINES:])
    return "\n".join(sections)


def work_dirs(funcargs: dict[str, Any]) -> set[Path]:
    """Where the test's jobs log: its tmp_path, and the work directory of a job a fixture shares (a
    module's bridge), itself or as its `job`."""
    found = {funcargs["tmp_path"]} if isinstance(funcargs.get("tmp_path"), Path) else set()
    for value in funcargs.values():
        job = value if isinstance(value, BridgeJob) else getattr(value, "job", None)
        if isinstance(job, BridgeJob):
            found.add(job.work_dir)
    return {d for d in found if d.exists()}
