"""A NATS service for the request/reply tests: it answers each request on a subject with `re: <data>`."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

from nats.aio.client import Client
from nats.aio.msg import Msg


@contextmanager
def nats_service(
    connect: Callable[[], Awaitable[Client]], subject: str, reply_subjects: list[str] | None = None
) -> Iterator[None]:
    """Answers each request on `subject` (with the request's headers) until the block ends; the reply
    subjects it was given go to `reply_subjects`: what any subscriber of `subject` sees and may publish
    to."""
    stop, ready = threading.Event(), threading.Event()

    async def serve() -> None:
        client = await connect()

        async def respond(request: Msg) -> None:
            if reply_subjects is not None:
                reply_subjects.append(request.reply)
            await request.respond(b"re: " + request.data)

        await client.subscribe(subject, cb=respond)
        await client.flush()
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.05)
        await client.close()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(30), "the NATS service did not start"
    try:
        yield
    finally:
        stop.set()
        thread.join(30)
