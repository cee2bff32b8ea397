"""Brokers shared by every worker of one pytest run (`--share-brokers`, the quick lane's option).

Without it, each pytest-xdist worker starts its own Kafka and ActiveMQ, as the full lane does: about 3.5
CPU-s a Kafka and 1.2 an ActiveMQ over a quick-lane run, paid again by every worker. With it, the first
worker to ask starts the broker and leaves its description (the broker object without its process handle)
in a directory the controller made; the others read it. The controller kills the brokers at the end of the
run, when no worker needs them any more.

Sharing is safe for the tests that use the session's `kafka` and `activemq`: their topics, queues, groups,
users and transactional ids carry names of their own (uuid), and a test that stops, freezes or restarts a
broker starts one of its own (`own_kafka`, `late_kafka`, ...). The full lane does not share: its
end-to-end scenarios name their bridges and topics after the examples.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import os
import pickle
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol, TypeVar

import pytest

OPTION = "--share-brokers"
DIRECTORY = "JMSBRIDGE_TEST_SHARED_BROKERS"  # set by the controller, inherited by its workers


class _Server(Protocol):
    process: subprocess.Popen[bytes] | None
    workdir: Path

    def cleanup(self) -> None: ...


Server = TypeVar("Server", bound=_Server)


def add_option(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION,
        action="store_true",
        help="one Kafka and one ActiveMQ for every pytest-xdist worker of the run instead of one each",
    )


def begin(config: pytest.Config) -> None:
    """In the controller (or a run without workers): the directory the workers leave their brokers in."""
    if config.getoption(OPTION) and not hasattr(config, "workerinput"):
        os.environ[DIRECTORY] = tempfile.mkdtemp(prefix="jmsbridge-shared-brokers-")


def end(config: pytest.Config) -> None:
    """In the controller, once every worker is done: kill what they started and delete its files."""
    directory = os.environ.get(DIRECTORY)
    if directory is None or hasattr(config, "workerinput"):
        return
    for saved in Path(directory).glob("*.pickle"):
        pid, server = pickle.loads(saved.read_bytes())
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)  # started in a session of its own (`_Process._spawn`)
        shutil.rmtree(server.workdir, ignore_errors=True)
    shutil.rmtree(directory, ignore_errors=True)
    del os.environ[DIRECTORY]


def session_server(config: pytest.Config, name: str, start: Callable[[], Server]) -> Iterator[Server]:
    """A session fixture's body: `start()`'s server, this worker's own or, with `--share-brokers`, the
    run's."""
    directory = os.environ.get(DIRECTORY) if config.getoption(OPTION) else None
    if directory is None:
        server = start()
        yield server
        server.cleanup()
        return
    saved = Path(directory) / f"{name}.pickle"
    with open(Path(directory) / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker starts it; the others wait for its description
        if saved.exists():
            _, server = pickle.loads(saved.read_bytes())
        else:
            server = start()
            assert server.process is not None
            described = copy.copy(server)
            described.process = None  # a handle only the starting worker can use
            saved.write_bytes(pickle.dumps((server.process.pid, described)))
    yield server
