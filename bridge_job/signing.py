"""The bridge's key: what signs the marks only the bridge itself may make.

Anyone who may publish on NATS, produce to a bridge's Kafka topics or send to its JMS sources can write
any subject, header or property, so a mark the bridge acts on (a NATS reply subject naming the JMS
destination of the answer, the loop marks that make the ingress drop a record and the egress a JMS message)
carries a MAC made with a key that only the bridge's pods hold.

The operator makes one key per bridge, in the Secret `<bridge>-key` (operator/jmsbridge_operator/identity.py),
and gives it to both instances of the bridge (the driver and the executors) in the environment variable
KEY_ENV, so that a mark made by one instance is good at the other after a failover; the MACs cover the
bridge id too, so a mark one bridge made is no other bridge's.

A job run by hand without it makes a key of its own for its lifetime, and says so: its marks are then good
only until it restarts. The key is made when this module is first imported and put in the process's
environment: a local run's driver imports it (through the routing it checks) before it starts Spark's JVM,
whose Python workers, which sign and verify, then inherit the one key. Made later, in each worker, the keys
would differ: a worker's answers and loop marks would not verify at another's.

What does not verify is not acted on, and `Forgeries` says so in the log, rate-limited: whoever floods the
bridge with forged marks does not flood its log too.
"""

from __future__ import annotations

import base64
import enum
import functools
import hashlib
import hmac
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable
from typing import Final

KEY_ENV: Final = "JMSBRIDGE_BRIDGE_KEY"
MADE_ENV: Final = "JMSBRIDGE_BRIDGE_KEY_MADE"  # set beside a key a process made: who uses it says so
MAC_BYTES: Final = 16  # 128 bits: a forger must guess it, and it keeps a NATS subject short
LOG_EVERY_SECONDS: Final = 60.0

log = logging.getLogger("jmsbridge.signing")


def _make_a_key_unless_given() -> None:
    """A key of this process's own in KEY_ENV when it has none, for the processes it starts to inherit."""
    if not os.environ.get(KEY_ENV):
        os.environ[KEY_ENV] = secrets.token_urlsafe(32)
        os.environ[MADE_ENV] = str(os.getpid())


_make_a_key_unless_given()  # on import: before a local run's driver starts Spark (see above)


@functools.cache
def bridge_key() -> bytes:
    """The bridge's key, from KEY_ENV; one this job made when it was not set."""
    _make_a_key_unless_given()
    if os.environ.get(MADE_ENV):
        log.warning(
            "%s is not set: this job signs NATS reply subjects and loop marks with a key of its own, good "
            "until it stops (the operator sets it from the bridge's key Secret; set it to one random secret "
            "for both instances of a job run by hand)",
            KEY_ENV,
        )
    return os.environ[KEY_ENV].encode()


def mac(key: bytes, *parts: bytes) -> str:
    """The MAC of `parts` (each length-prefixed, so no two lists of parts sign alike), URL-safe base64."""
    digest = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        digest.update(len(part).to_bytes(4, "big"))
        digest.update(part)
    return base64.urlsafe_b64encode(digest.digest()[:MAC_BYTES]).rstrip(b"=").decode()


def verify(key: bytes, given: str, *parts: bytes) -> bool:
    return hmac.compare_digest(given.encode(), mac(key, *parts).encode())


class LoopMark(enum.Enum):
    """What a message's loop mark says of it, for where it would go now."""

    NONE = "none"  # another producer's, or from somewhere else
    LOOP = "loop"  # this bridge sent it from where it would now go: a loop
    FORGED = "forged"  # claims so, and its MAC does not verify (or it has none)


def vouched(key: bytes, given: str | None, *parts: bytes) -> LoopMark:
    """A mark that claims a loop: LOOP when its MAC (`given`) verifies over `parts`, else FORGED."""
    return LoopMark.LOOP if given is not None and verify(key, given, *parts) else LoopMark.FORGED


class Forgeries:
    """Marks seen that the bridge did not make (`what`): one warning per LOG_EVERY_SECONDS at most, with
    how many were seen since the last one."""

    def __init__(
        self, what: str, every: float = LOG_EVERY_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.what = what
        self.every = every
        self._clock = clock
        self.seen_total = 0
        self._unlogged = 0
        self._logged_at: float | None = None
        self._lock = threading.Lock()

    def seen(self, why: str) -> None:
        now = self._clock()
        with self._lock:
            self.seen_total += 1
            self._unlogged += 1
            if self._logged_at is not None and now - self._logged_at < self.every:
                return
            count, self._unlogged, self._logged_at = self._unlogged, 0, now
        log.warning("%s: %s (%d seen since the last such line)", self.what, why, count)
