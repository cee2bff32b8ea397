"""Operator start and stop: kopf settings, the API client, the reconciler and its Kafka gate, metrics."""

from __future__ import annotations

import logging
from typing import Any

import kopf

from bridge_job.contract import LABEL_BRIDGE_ID
from bridge_job.contract.clients import LEASES, Kube, pod_name
from jmsbridge_operator import naming
from jmsbridge_operator.handlers.diffbase import BridgeDigestStorage, UnmarkedProgressStorage
from jmsbridge_operator.handlers.kafka_checks import KafkaChecks
from jmsbridge_operator.kafka_checks.gate import open_gate
from jmsbridge_operator.metrics import MetricsServer
from jmsbridge_operator.options import OperatorOptions
from jmsbridge_operator.reconciler import Reconciler

logger = logging.getLogger("jmsbridge_operator")


def configure(settings: kopf.OperatorSettings, memo: Any, options: OperatorOptions) -> None:
    # kopf's bookkeeping goes to annotations under our prefix, never into status (which is the user's
    # view), and our finalizer has our name.
    settings.persistence.finalizer = naming.FINALIZER
    settings.persistence.progress_storage = UnmarkedProgressStorage(prefix=naming.ANNOTATION_PREFIX)
    # Of a bridge, only a digest, in memory: no copy of a spec that may hold a waived credential, and no
    # patch of the bridge per handled change (diffbase.py).
    memo.diffbase = settings.persistence.diffbase_storage = BridgeDigestStorage()
    # Only the Leases the jobs label with their bridge id, selected by the API server: not every Lease
    # of the cluster (the nodes' and controllers' renew every few seconds).
    settings.watching.label_selectors[LEASES] = LABEL_BRIDGE_ID
    # Watches end server-side after a while and are restarted: a silently dead connection recovers.
    settings.watching.server_timeout = options.watch_timeout_seconds
    settings.watching.client_timeout = options.watch_timeout_seconds + 30
    settings.watching.connect_timeout = 30
    settings.networking.request_timeout = 60
    settings.execution.max_workers = options.workers
    # An idle per-object worker ends after 1 s (kopf: 5 s), and with it the last body it held: with
    # hundreds of bridges created at once, the bodies held for 5 s were 15 MiB of peak memory.
    settings.queueing.idle_timeout = 1.0
    # kopf keeps a deleted bridge's finalizer until its daemons and timers have ended; one still finishing
    # a reconciliation (in a thread) is looked at again after this: kopf's 60 s left a bridge deleted
    # during one there for a minute.
    settings.background.cancellation_polling = 1.0
    # One operator replica (the chart's Deployment uses the Recreate strategy): no peering objects.
    settings.peering.standalone = True
    # Only our explicit Events (transitions, writes), not every handler's log line; from us, not "kopf"
    # (the From column of `kubectl describe`), and from which replica.
    settings.posting.loggers = False
    settings.posting.reporting_component = naming.MANAGER
    settings.posting.reporting_instance = pod_name()
    settings.posting.event_name_prefix = f"{naming.MANAGER}-"

    memo.options = options
    # With the Kafka checks on, the reconciler asks their gate; off, nothing holds a bridge back.
    checks = KafkaChecks(options.kafka_check_settings()) if options.kafka_checks else None
    memo.kafka_checks = checks
    gate = checks.gate if checks is not None else open_gate
    memo.reconciler = Reconciler(
        Kube.connect(),
        gate=gate,
        backoff=options.conflict_backoff(),
        timing=options.timing,
        job_image=options.job_image,
        policy=options.policy,
        secrets_max_age=options.secret_check_interval_seconds,
    )
    logger.info("Bridges that name no image run %s", options.job_image)
    privileged = "allowed" if options.policy.privileged_pods else "refused"
    accounts = ", ".join(sorted(options.policy.service_accounts))
    logger.info("Bridges' pods may run as %s; beyond Pod Security restricted: %s", accounts, privileged)
    if options.secret_check_interval_seconds:
        logger.info("Secrets the bridges read checked every %gs", options.secret_check_interval_seconds)
    if checks is not None:
        timing = checks.settings
        logger.info("Kafka checks every %gs, grace period %gs", timing.interval_seconds, timing.grace_seconds)
    else:
        logger.warning("Kafka checks are off: bridges start without checking their topics and permissions")
    memo.metrics = None
    if options.metrics_port is not None:
        memo.metrics = MetricsServer(options.metrics_port, options.metrics_address)
        logger.info("metrics on %s:%d/metrics", options.metrics_address, options.metrics_port)


def cleanup(memo: Any) -> None:
    if getattr(memo, "metrics", None) is not None:
        memo.metrics.stop()
        memo.metrics = None
    reconciler = getattr(memo, "reconciler", None)
    if reconciler is not None:
        reconciler.stopping.set()
        reconciler.kube.close()
