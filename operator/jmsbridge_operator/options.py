"""The operator's own settings, read from the environment.

`jmsbridge operator --metrics-port 9090 ...` sets these variables and runs kopf; `kopf run -m
jmsbridge_operator` with the same variables behaves the same. kopf's own settings (namespaces, liveness
endpoint, log format) are kopf's command-line options.

They are read twice: when `main` is imported, for what kopf fixes at registration (the resync timer's
interval, the handlers' retry back-off), and again when the operator starts, for everything else (the
Kafka checks, workers, watches, metrics). The two agree unless the environment changed in between, which
only tests do (one process, several operators with different Kafka check timings).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from bridge_job.config import DEFAULT_JOB_IMAGE
from jmsbridge_operator.kafka_checks.evaluation import CheckSettings
from jmsbridge_operator.policy import DEFAULT_POLICY, Policy
from jmsbridge_operator.taken_names import Backoff
from jmsbridge_operator.timing import DEFAULT_TIMING, Timing

ENV_METRICS_PORT = "JMSBRIDGE_METRICS_PORT"
ENV_METRICS_ADDRESS = "JMSBRIDGE_METRICS_ADDRESS"
ENV_RESYNC_SECONDS = "JMSBRIDGE_RESYNC_SECONDS"
ENV_WATCH_TIMEOUT = "JMSBRIDGE_WATCH_TIMEOUT"
ENV_WORKERS = "JMSBRIDGE_WORKERS"
ENV_RETRY_SECONDS = "JMSBRIDGE_RETRY_SECONDS"
ENV_KAFKA_CHECKS = "JMSBRIDGE_KAFKA_CHECKS"
ENV_KAFKA_CHECK_INTERVAL = "JMSBRIDGE_KAFKA_CHECK_INTERVAL"
ENV_KAFKA_GRACE_PERIOD = "JMSBRIDGE_KAFKA_GRACE_PERIOD"
ENV_SECRET_CHECK_INTERVAL = "JMSBRIDGE_SECRET_CHECK_INTERVAL"
ENV_CONFLICT_BACKOFF = "JMSBRIDGE_CONFLICT_BACKOFF"
ENV_CONFLICT_BACKOFF_MAX = "JMSBRIDGE_CONFLICT_BACKOFF_MAX"
ENV_FAILURE_WINDOW = "JMSBRIDGE_FAILURE_WINDOW"
ENV_ROLLOUT_DEADLINE = "JMSBRIDGE_ROLLOUT_DEADLINE"
ENV_SETTLE_SECONDS = "JMSBRIDGE_SETTLE_SECONDS"
ENV_GATHER_SECONDS = "JMSBRIDGE_GATHER_SECONDS"
ENV_JOB_IMAGE = "JMSBRIDGE_JOB_IMAGE"
ENV_SERVICE_ACCOUNTS = "JMSBRIDGE_SERVICE_ACCOUNTS"
ENV_PRIVILEGED_PODS = "JMSBRIDGE_PRIVILEGED_PODS"
ENV_UNMARKED_SECRETS = "JMSBRIDGE_UNMARKED_SECRETS"

_FALSE = frozenset({"0", "false", "no", "off"})
_TRUE = frozenset({"1", "true", "yes", "on"})


@dataclasses.dataclass(frozen=True)
class OperatorOptions:
    metrics_port: int | None = None  # no metrics endpoint unless asked for
    metrics_address: str = "0.0.0.0"
    # A full pass over every bridge now and then repairs drift nobody told us about (a deleted ConfigMap).
    resync_seconds: float = 300.0
    # A watch request ends after this long on the server side and is started again, so a stuck watch
    # (a silently dropped connection) recovers; the client gives up a little later. Whole seconds: kopf
    # sends it as `timeoutSeconds`, which the API server parses as an integer ("300.0" is a 400).
    watch_timeout_seconds: int = 300
    workers: int = 8  # threads for the (synchronous) handlers
    retry_seconds: float = 5.0  # back-off before kopf retries a failed handler
    # The Kafka checks of every bridge (docs/kafka-checks.md): on unless switched off, e.g. where the
    # operator cannot reach the bridges' Kafka clusters (the bridges then start unchecked).
    kafka_checks: bool = True
    kafka_check_interval_seconds: float = 60.0  # between checks of a bridge
    kafka_grace_seconds: float = 300.0  # Kafka unreachable this long: a hard failure (Stalled)
    # The Secrets a bridge's pods read are read again this often, and a new version rolls the bridge
    # (secret_versions.py); 0: the operator does not follow Secrets (a rotation needs spec.restartNonce).
    secret_check_interval_seconds: float = 60.0
    # A child's name held by an object not ours is looked at again after this, doubling up to the cap.
    conflict_backoff_seconds: float = 5.0
    conflict_backoff_max_seconds: float = 300.0
    timing: Timing = DEFAULT_TIMING  # when failures count as one streak, how long a rollout may take
    # What bridges that name no `spark.image` run: this release's job image, or one from your registry.
    job_image: str = DEFAULT_JOB_IMAGE
    # What bridges may ask of Kubernetes (policy.py): more service accounts, privileged pods.
    policy: Policy = DEFAULT_POLICY

    def __post_init__(self) -> None:
        if self.kafka_check_interval_seconds <= 0:
            raise ValueError(f"Kafka check interval {self.kafka_check_interval_seconds}: must be positive")
        if self.secret_check_interval_seconds < 0:
            interval = self.secret_check_interval_seconds
            raise ValueError(f"Secret check interval {interval}: must not be negative (0: off)")
        if self.watch_timeout_seconds <= 0:
            raise ValueError(f"Watch timeout {self.watch_timeout_seconds}: must be a positive whole number")
        if self.kafka_grace_seconds < 0:
            raise ValueError(f"Kafka grace period {self.kafka_grace_seconds}: must not be negative")

    def conflict_backoff(self) -> Backoff:
        return Backoff(self.conflict_backoff_seconds, self.conflict_backoff_max_seconds)

    def kafka_check_settings(self) -> CheckSettings:
        """The checks' timing; the probe's own deadlines keep their defaults."""
        interval = self.kafka_check_interval_seconds
        return CheckSettings(
            interval_seconds=interval,
            grace_seconds=self.kafka_grace_seconds,
            retry_seconds=min(CheckSettings.retry_seconds, interval),
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorOptions:
        env = os.environ if env is None else env
        defaults = cls()

        def number(name: str, default: float) -> float:
            raw = env.get(name, "").strip()
            return float(raw) if raw else default

        def whole(name: str, default: int) -> int:
            raw = env.get(name, "").strip()
            try:
                return int(raw) if raw else default
            except ValueError:
                raise ValueError(f"{name}={raw!r}: must be a whole number of seconds") from None

        port = env.get(ENV_METRICS_PORT, "").strip()
        return cls(
            metrics_port=int(port) if port else None,
            metrics_address=env.get(ENV_METRICS_ADDRESS, "").strip() or defaults.metrics_address,
            resync_seconds=number(ENV_RESYNC_SECONDS, defaults.resync_seconds),
            watch_timeout_seconds=whole(ENV_WATCH_TIMEOUT, defaults.watch_timeout_seconds),
            workers=int(number(ENV_WORKERS, defaults.workers)),
            retry_seconds=number(ENV_RETRY_SECONDS, defaults.retry_seconds),
            kafka_checks=env.get(ENV_KAFKA_CHECKS, "").strip().lower() not in _FALSE,
            kafka_check_interval_seconds=number(
                ENV_KAFKA_CHECK_INTERVAL, defaults.kafka_check_interval_seconds
            ),
            kafka_grace_seconds=number(ENV_KAFKA_GRACE_PERIOD, defaults.kafka_grace_seconds),
            secret_check_interval_seconds=number(
                ENV_SECRET_CHECK_INTERVAL, defaults.secret_check_interval_seconds
            ),
            conflict_backoff_seconds=number(ENV_CONFLICT_BACKOFF, defaults.conflict_backoff_seconds),
            conflict_backoff_max_seconds=number(
                ENV_CONFLICT_BACKOFF_MAX, defaults.conflict_backoff_max_seconds
            ),
            job_image=env.get(ENV_JOB_IMAGE, "").strip() or defaults.job_image,
            policy=Policy(
                service_accounts=defaults.policy.service_accounts
                | {name.strip() for name in env.get(ENV_SERVICE_ACCOUNTS, "").split(",") if name.strip()},
                privileged_pods=env.get(ENV_PRIVILEGED_PODS, "").strip().lower() in _TRUE,
                unmarked_secrets=env.get(ENV_UNMARKED_SECRETS, "").strip().lower() in _TRUE,
            ),
            timing=Timing(
                failure_window_seconds=number(ENV_FAILURE_WINDOW, defaults.timing.failure_window_seconds),
                rollout_deadline_seconds=number(
                    ENV_ROLLOUT_DEADLINE, defaults.timing.rollout_deadline_seconds
                ),
                settle_seconds=number(ENV_SETTLE_SECONDS, defaults.timing.settle_seconds),
                gather_seconds=number(ENV_GATHER_SECONDS, defaults.timing.gather_seconds),
            ),
        )
