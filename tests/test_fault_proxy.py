"""The tests' fault proxy (tests/support/fault_proxy.py) on a real TCP echo server: it forwards, refuses,
blackholes (the client times out) and heals."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

from tests.support.fault_proxy import FaultProxy


@pytest.fixture
def echo() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            while data := conn.recv(1024):
                conn.sendall(data)

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                threading.Thread(target=serve, args=(server.accept()[0],), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def ask(port: int, timeout: float = 2.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(b"ping")
        return conn.recv(1024)


def test_forward_refuse_blackhole_heal(echo: int) -> None:
    proxy = FaultProxy("127.0.0.1", echo)
    try:
        assert ask(proxy.port) == b"ping"
        proxy.refuse()
        with pytest.raises(ConnectionError):
            ask(proxy.port)
        proxy.blackhole()
        with pytest.raises(TimeoutError):
            ask(proxy.port, timeout=0.5)
        proxy.heal()
        assert ask(proxy.port) == b"ping"
    finally:
        proxy.close()
