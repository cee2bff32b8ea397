"""
Serving the emulator on a loopback port from a background thread with its own event loop.

The emulator gets its own loop so that synchronous tests, pytest-asyncio's loop and kopf's loop
(another thread, see `operator_runner`) can all talk to it over HTTP at the same time.

kmock's own `Server` is not used: it also replaces aiohttp's host resolver process-wide, which is
neither needed here nor safe with servers starting and stopping in several threads. aiohttp's
low-level server runs the emulator (a plain request handler) directly.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import aiohttp.web

from tests.kubeapi.emulator import KubeApiEmulator

T = TypeVar("T")

MAX_BODY_SIZE = 64 * 1024 * 1024  # CRDs with big schemas (the spark-operator's) are over aiohttp's 1 MiB


class ServingThread:
    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, **emulator_options: Any) -> None:
        self._host = host
        self._port = port
        self._emulator_options = emulator_options
        self._thread = threading.Thread(target=self._run, name="kube-api-emulator", daemon=True)
        self._started: concurrent.futures.Future[str] = concurrent.futures.Future()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._emulator: KubeApiEmulator | None = None
        self.url = ""

    @property
    def emulator(self) -> KubeApiEmulator:
        assert self._emulator is not None, "the emulator is not running"
        return self._emulator

    def start(self, timeout: float = 30) -> None:
        self._thread.start()
        self.url = self._started.result(timeout=timeout)

    def stop(self, timeout: float = 30) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join(timeout=timeout)
        if self._thread.is_alive():
            raise TimeoutError("the Kubernetes API emulator did not stop in time")

    def call(self, fn: Callable[[], T], timeout: float = 30) -> T:
        """Run `fn` in the emulator's loop (where its state may be read safely) and return its result."""
        assert self._loop is not None, "the emulator is not running"

        async def in_loop() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(in_loop(), self._loop).result(timeout=timeout)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as e:
            if not self._started.done():
                self._started.set_exception(e)
            else:
                raise

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        loop = self._loop

        def make_request(
            message: Any, payload: Any, protocol: Any, writer: Any, task: Any
        ) -> aiohttp.web.BaseRequest:
            return aiohttp.web.BaseRequest(
                message, payload, protocol, writer, task, loop, client_max_size=MAX_BODY_SIZE
            )

        emulator = KubeApiEmulator(**self._emulator_options)
        async with emulator:
            self._emulator = emulator
            server = aiohttp.web.Server(
                emulator, request_factory=make_request, handler_cancellation=True, access_log=None
            )
            runner = aiohttp.web.ServerRunner(server, shutdown_timeout=5)
            await runner.setup()
            try:
                site = aiohttp.web.TCPSite(runner, self._host, self._port)
                await site.start()
                host, port = runner.addresses[0][:2]
                self._started.set_result(f"http://{host}:{port}")
                await self._stopping.wait()
            finally:
                emulator.close()
                await runner.cleanup()
