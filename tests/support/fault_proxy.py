"""A TCP proxy the test controls, between a client (the job) and a server (a broker, the real API server).

It forwards until told otherwise:

- `refuse()`: new connections are reset as soon as they arrive, and the open ones are reset (a server
  that went away: the client sees refusals and resets at once);
- `blackhole()`: new connections are accepted and never answered, and what the open ones send goes
  nowhere (a network partition: the client sees nothing but its own timeouts);
- `heal()`: forwarding again; connections opened or stalled meanwhile are reset, so the client opens new
  ones, as it would after a real partition heals.

It suits protocols whose clients keep talking to the address they were given (JMS, the Kubernetes API);
Kafka clients bypass it after bootstrap (a broker advertises its own address), so the tests cut Kafka by
freezing the broker process instead (jmsbridge/local.py).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from typing import Literal

Mode = Literal["forward", "refuse", "blackhole"]
CHUNK = 65536


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset rather than a clean end of stream."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.mode: Mode = "forward"
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, name="fault-proxy", daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def refuse(self) -> None:
        self._set("refuse")

    def blackhole(self) -> None:
        self._set("blackhole")

    def heal(self) -> None:
        self._set("forward")

    def close(self) -> None:
        self._closed = True
        self._set("refuse")
        with contextlib.suppress(OSError):
            self._listener.close()

    def _set(self, mode: Mode) -> None:
        with self._lock:
            changed, self.mode = mode != self.mode, mode
            doomed = list(self._open) if changed and mode != "blackhole" else []
        for sock in doomed:  # refused: reset now; healed: whatever stalled starts over
            _reset(sock)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.mode == "refuse":
                _reset(client)
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.upstream, timeout=10)
            server.settimeout(None)
        except OSError:
            _reset(client)
            return
        with self._lock:
            self._open |= {client, server}
        for source, target in ((client, server), (server, client)):
            threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while True:
                data = source.recv(CHUNK)
                if not data:
                    break
                if self.mode == "forward":
                    target.sendall(data)
                # blackholed: read and dropped, never answered
        except OSError:
            pass
        finally:
            with self._lock:
                self._open -= {source, target}
            _reset(source)
            _reset(target)
