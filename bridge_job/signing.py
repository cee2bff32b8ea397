"""The bridge's key: what signs the marks only the bridge itself may make.

Anyone who may publish on NATS or produce to a bridge's Kafka topics can write any subject or header, so a
mark the bridge acts on (a NATS reply subject naming the JMS destination of the answer, the loop mark that
makes the ingress drop a record) carries a MAC made with a key that only the bridge's pods hold.

The operator keeps one key per bridge in a Secret of its own and gives it to both instances (the driver and
the executors) in the environment variable KEY_ENV, so that a mark made by one instance is good at the other
after a failover. A job run by hand without it makes a key of its own for its lifetime, and says so: its
marks are then good only until it restarts. That key is put in the process's environment, so that the
processes it starts afterwards (Spark's JVM and its Python workers, in a local run) sign with it too; a
process that made one after starting them signs alone.

What does not verify is not acted on, and `Forgeries` says so in the log, rate-limited: whoever floods the
bridge with forged marks does not flood its log too.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import logging
import os
import secrets
import threading
import time
from typing import Final

KEY_ENV: Final = "JMSBRIDGE_BRIDGE_KEY"
MAC_BYTES: Final = 16  # 128 bits: a forger must guess it, and it keeps a NATS subject short
LOG_EVERY_SECONDS: Final = 60.0

log = logging.getLogger("jmsbridge.signing")


@functools.cache
def bridge_key() -> bytes:
    """The bridge's key, from KEY_ENV; a key of this process's own when it is not set."""
    given = os.environ.get(KEY_ENV, "")
    if given:
        return given.encode()
    log.warning(
        "%s is not set: this process signs NATS reply subjects and loop marks with a key of its own, good "
        "until it stops (the operator sets it from the bridge's key Secret; set it to one random secret for "
        "both instances of a job run by hand)",
        KEY_ENV,
    )
    made = os.environ[KEY_ENV] = secrets.token_urlsafe(32)  # inherited by the processes started from now on
    return made.encode()


def mac(key: bytes, *parts: bytes) -> str:
    """The MAC of `parts` (each length-prefixed, so no two lists of parts sign alike), URL-safe base64."""
    digest = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        digest.update(len(part).to_bytes(4, "big"))
        digest.update(part)
    return base64.urlsafe_b64encode(digest.digest()[:MAC_BYTES]).rstrip(b"=").decode()


def verify(key: bytes, given: str, *parts: bytes) -> bool:
    return hmac.compare_digest(given.encode(), mac(key, *parts).encode())


class Forgeries:
    """Marks seen that the bridge did not make (`what`): one warning per LOG_EVERY_SECONDS at most, with
    how many were seen since the last one."""

    def __init__(self, what: str, every: float = LOG_EVERY_SECONDS) -> None:
        self.what = what
        self.every = every
        self.seen_total = 0
        self._unlogged = 0
        self._logged_at: float | None = None
        self._lock = threading.Lock()

    def seen(self, why: str) -> None:
        now = time.monotonic()
        with self._lock:
            self.seen_total += 1
            self._unlogged += 1
            if self._logged_at is not None and now - self._logged_at < self.every:
                return
            count, self._unlogged, self._logged_at = self._unlogged, 0, now
        log.warning("%s (%d since the last such line): %s", self.what, count, why)
