"""The operator's own settings, read from the environment when it starts.

`jmsbridge operator --metrics-port 9090 ...` sets these variables and runs kopf; `kopf run -m
jmsbridge_operator` with the same variables behaves the same. kopf's own settings (namespaces, liveness
endpoint, log format) are kopf's command-line options.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

ENV_METRICS_PORT = "JMSBRIDGE_METRICS_PORT"
ENV_METRICS_ADDRESS = "JMSBRIDGE_METRICS_ADDRESS"
ENV_RESYNC_SECONDS = "JMSBRIDGE_RESYNC_SECONDS"
ENV_WATCH_TIMEOUT = "JMSBRIDGE_WATCH_TIMEOUT"
ENV_WORKERS = "JMSBRIDGE_WORKERS"
ENV_RETRY_SECONDS = "JMSBRIDGE_RETRY_SECONDS"


@dataclasses.dataclass(frozen=True)
class OperatorOptions:
    metrics_port: int | None = None  # no metrics endpoint unless asked for
    metrics_address: str = "0.0.0.0"
    # A full pass over every bridge now and then repairs drift nobody told us about (a deleted ConfigMap).
    resync_seconds: float = 300.0
    # A watch request ends after this long on the server side and is started again, so a stuck watch
    # (a silently dropped connection) recovers; the client gives up a little later.
    watch_timeout_seconds: float = 300.0
    workers: int = 8  # threads for the (synchronous) handlers
    retry_seconds: float = 5.0  # back-off before kopf retries a failed handler

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorOptions:
        env = os.environ if env is None else env
        defaults = cls()

        def number(name: str, default: float) -> float:
            raw = env.get(name, "").strip()
            return float(raw) if raw else default

        port = env.get(ENV_METRICS_PORT, "").strip()
        return cls(
            metrics_port=int(port) if port else None,
            metrics_address=env.get(ENV_METRICS_ADDRESS, "").strip() or defaults.metrics_address,
            resync_seconds=number(ENV_RESYNC_SECONDS, defaults.resync_seconds),
            watch_timeout_seconds=number(ENV_WATCH_TIMEOUT, defaults.watch_timeout_seconds),
            workers=int(number(ENV_WORKERS, defaults.workers)),
            retry_seconds=number(ENV_RETRY_SECONDS, defaults.retry_seconds),
        )
