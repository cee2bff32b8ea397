"""Stopping a local server (`jmsbridge.local`) whose launcher exits before the server does, as noida-db's
Python launcher does while its server still writes its data out: stop() waits for the port, and kills the
server that does not let go of it, rather than failing the benchmark or test that stops it.

The server here is a stand-in (a Python child listening on a port), since a real noida-db takes 100,000s
of records to be slow enough to show it."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from jmsbridge.local import _Process, free_port, port_open, wait_until

LAUNCHER = textwrap.dedent(
    """
    import os, signal, socket, sys, time

    port, flushed, ignore_term = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "ignore"
    if os.fork() == 0:  # the server: the launcher's child, in its process group
        def flush(*_):
            time.sleep(0.5)  # what it has to write out
            open(flushed, "w").close()
            sys.exit(0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN if ignore_term else flush)
        listener = socket.create_server(("127.0.0.1", port))
        while True:
            listener.accept()[0].close()
    signal.pause()  # the launcher: exits on SIGTERM at once
    """
)


class StandIn(_Process):
    name = "stand-in"

    def __init__(self, flushed: Path, ignore_term: bool, release_seconds: float) -> None:
        super().__init__()
        self.port = free_port()
        self.release_seconds = release_seconds
        self.argv = [sys.executable, "-c", LAUNCHER, str(self.port), str(flushed)]
        self.argv.append("ignore" if ignore_term else "flush")

    def start(self) -> StandIn:
        self._spawn(self.argv)
        wait_until(lambda: self._check_alive() and port_open(self.port), 30, "the stand-in's port")
        return self


def test_a_server_that_outlives_its_launcher_is_given_time_to_finish(tmp_path: Path) -> None:
    server = StandIn(tmp_path / "flushed", ignore_term=False, release_seconds=30).start()
    server.cleanup()
    assert not port_open(server.port)
    assert (tmp_path / "flushed").exists()  # it ended by itself, its data written


def test_a_server_that_does_not_let_go_of_its_port_is_killed(tmp_path: Path) -> None:
    server = StandIn(tmp_path / "flushed", ignore_term=True, release_seconds=2).start()
    server.cleanup()  # no TimeoutError: the benchmark or test that stops it goes on
    assert not port_open(server.port)
    assert not (tmp_path / "flushed").exists()
