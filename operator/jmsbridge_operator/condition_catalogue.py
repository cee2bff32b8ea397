"""The catalogue of status conditions: every condition type and reason the operator writes, and what sets it.

A JmsBridge's and a JmsBridgeRoute's `status.conditions` are what Flux, Argo CD and a person on call read,
so their words are an interface: a reason renamed in one module and not in the docs breaks an alert or a
runbook silently. They are named here, once, and the modules that make conditions use these names;
tests/operator/test_condition_catalogue.py fails when a `Condition(...)` in the operator's code uses a word
this catalogue lacks, when a word here is made by no code or missing from docs/operator.md (Status), or
when a table there names a reason this catalogue does not have. docs/troubleshooting.md says what to do
about each.

Some reasons are not the operator's own words but passed on: the job writes them into its health
ConfigMap (`Connected`, `Reconnecting`, `CheckpointMismatch`, `JmsAuthenticationFailed`, `JmsTlsFailed`),
and the validation rules shared with the job name their faults (`InvalidSpec`, `InvalidMatch`,
`DuplicateOrder`). Those are imported from the job's config, which defines them, so that the two sides
cannot drift apart. Pure: names only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from bridge_job import config as job
from bridge_job.config import validation

# ---------------------------------------------------------------------------------------------------
# Types

READY = "Ready"  # always present (kstatus): True when the bridge moves data, or the route is in effect
RECONCILING = "Reconciling"  # only while True: on the way to Ready by itself
STALLED = "Stalled"  # only while True: a person must act
ACCEPTED = "Accepted"  # a route: in effect in its bridge (also the reason when True)
KAFKA_READY = "KafkaReady"  # with the Kafka checks on
ACTIVE_INSTANCE = "ActiveInstance"  # a standby pair, while an application runs
CHECKPOINT_SHARED = "CheckpointShared"  # a standby pair
JMS_CONNECTED = "JmsConnected"  # these four once the job reported on the system
KAFKA_CONNECTED = "KafkaConnected"
NATS_CONNECTED = "NatsConnected"
SCHEMA_REGISTRY_CONNECTED = "SchemaRegistryConnected"

TYPES = (
    READY,
    RECONCILING,
    STALLED,
    ACCEPTED,
    KAFKA_READY,
    ACTIVE_INSTANCE,
    CHECKPOINT_SHARED,
    JMS_CONNECTED,
    KAFKA_CONNECTED,
    NATS_CONNECTED,
    SCHEMA_REGISTRY_CONNECTED,
)

# ---------------------------------------------------------------------------------------------------
# Reasons

# The job's words, passed on from its health ConfigMap: a system's state as it reports it...
CONNECTED = job.JMS_CONNECTED
RECONNECTING = job.JMS_RECONNECTING
# ...and why it stopped, when it says so before it exits.
CHECKPOINT_MISMATCH = job.CHECKPOINT_MISMATCH
JMS_AUTHENTICATION_FAILED = job.JMS_AUTHENTICATION_FAILED
JMS_TLS_FAILED = job.JMS_TLS_FAILED
# The faults of the validation rules the job applies too.
INVALID_SPEC = validation.INVALID_SPEC
INVALID_MATCH = validation.INVALID_MATCH
DUPLICATE_ORDER = validation.DUPLICATE_ORDER

# The operator's own.
RUNNING = "Running"
DEGRADED = "Degraded"
STANDBY_STARTING = "StandbyStarting"
STARTING = "Starting"
SUSPENDED = "Suspended"
NAME_CONFLICT = "NameConflict"
APPLICATION_RESTARTING = "ApplicationRestarting"
APPLICATION_FAILED = "ApplicationFailed"
ROLLOUT_FAILED = "RolloutFailed"
ROLLING_OUT = "RollingOut"
ROLLING_OUT_WITH_GAP = "RollingOutWithGap"
# Ready's reason while the job reports a system lost (its own condition then says `Reconnecting`).
JMS_RECONNECTING = "JmsReconnecting"
KAFKA_RECONNECTING = "KafkaReconnecting"
NATS_RECONNECTING = "NatsReconnecting"
SCHEMA_REGISTRY_RECONNECTING = "SchemaRegistryReconnecting"
LEASE_HELD = "LeaseHeld"
AWAITING_LEASE = "AwaitingLease"
NO_ACTIVE_INSTANCE = "NoActiveInstance"
CHECKING_KAFKA = "CheckingKafka"
CREDENTIALS_NOT_FOUND = "CredentialsNotFound"
KAFKA_AUTHENTICATION_FAILED = "KafkaAuthenticationFailed"  # bridge_job.kafka.refusals.RefusalKind
KAFKA_TLS_FAILED = "KafkaTlsFailed"
KAFKA_UNREACHABLE = "KafkaUnreachable"
TOPIC_NOT_FOUND = "TopicNotFound"
TOPIC_AUTHORIZATION_FAILED = "TopicAuthorizationFailed"
GROUP_AUTHORIZATION_FAILED = "GroupAuthorizationFailed"
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = "TransactionalIdAuthorizationFailed"
SCHEMA_REGISTRY_REFUSED = "SchemaRegistryRefused"
SCHEMA_INCOMPATIBLE = "SchemaIncompatible"
SCHEMA_REGISTRY_UNREACHABLE = "SchemaRegistryUnreachable"
VERIFIED = "Verified"
READ_WRITE_MANY = "ReadWriteMany"  # the access mode a shared claim needs, named as Kubernetes names it
CHECKPOINT_NOT_SHARED = "CheckpointNotShared"
CHECKPOINT_CLAIM_NOT_FOUND = "CheckpointClaimNotFound"
IN_EFFECT = "InEffect"
BRIDGE_NOT_FOUND = "BridgeNotFound"
BRIDGE_INVALID = "BridgeInvalid"


@dataclasses.dataclass(frozen=True)
class Reason:
    """A reason, the condition types it appears on, and what sets it (a module, and when)."""

    name: str
    types: tuple[str, ...]
    set_by: str


# A bridge's Ready with Stalled, or with Reconciling: the two say the same reason (kstatus).
_STALLS = (READY, STALLED)
_RECONCILES = (READY, RECONCILING)
# A Kafka check's hard failure: KafkaReady False, and the gate stops the bridge with the same reason.
_KAFKA_FAILS = (KAFKA_READY, READY, STALLED)
# A route refused: Accepted and Ready False, Stalled when the route itself is at fault.
_ROUTE_REFUSED = (ACCEPTED, READY, STALLED)
_CONNECTIONS = (JMS_CONNECTED, KAFKA_CONNECTED, NATS_CONNECTED, SCHEMA_REGISTRY_CONNECTED)

_ALL = (
    # JmsBridge: what its SparkApplications say (status.py)
    Reason(RUNNING, (READY,), "status.py: the active instance runs"),
    Reason(DEGRADED, (READY,), "status.py: the active instance runs, the standby failed"),
    Reason(STANDBY_STARTING, (RECONCILING,), "status.py: the active instance runs, the standby not yet"),
    Reason(STARTING, _RECONCILES, "status.py: applications submitted, none runs yet"),
    Reason(SUSPENDED, (READY,), "status.py: spec.suspend"),
    Reason(NAME_CONFLICT, _STALLS, "planning.py: a child's name is held by an object not ours"),
    Reason(APPLICATION_RESTARTING, _RECONCILES, "status.py: no instance runs, the spark-operator restarts"),
    Reason(APPLICATION_FAILED, _STALLS, "status.py and restarts.py: no restart left, or the same failure 3x"),
    Reason(ROLLOUT_FAILED, _STALLS, "status.py: a standby failed the new spec or missed the deadline"),
    Reason(ROLLING_OUT, (RECONCILING,), "rollout.py: a new spec reaches the instances one by one"),
    Reason(ROLLING_OUT_WITH_GAP, (RECONCILING,), "rollout.py: the same without a standby"),
    # JmsBridge: what the job says in its health ConfigMap (job_health.py, then status.py)
    Reason(CHECKPOINT_MISMATCH, _STALLS, "the job's stop report (bridge_job/supervision/checkpoints.py)"),
    Reason(JMS_AUTHENTICATION_FAILED, (*_RECONCILES, STALLED), "the job's stop report (bridge_job/jms)"),
    Reason(JMS_TLS_FAILED, (*_RECONCILES, STALLED), "the job's stop report (bridge_job/jms)"),
    Reason(CONNECTED, _CONNECTIONS, "job_health.py: the job reports the system connected"),
    Reason(RECONNECTING, _CONNECTIONS, "job_health.py: the job reports waiting out an outage"),
    Reason(JMS_RECONNECTING, _RECONCILES, "status.py: JmsConnected is False"),
    Reason(KAFKA_RECONNECTING, _RECONCILES, "status.py: KafkaConnected is False"),
    Reason(NATS_RECONNECTING, _RECONCILES, "status.py: NatsConnected is False"),
    Reason(SCHEMA_REGISTRY_RECONNECTING, _RECONCILES, "status.py: SchemaRegistryConnected is False"),
    # JmsBridge: a standby pair's Lease and checkpoint
    Reason(LEASE_HELD, (ACTIVE_INSTANCE,), "lease_status.py: an instance holds the Lease"),
    Reason(AWAITING_LEASE, (ACTIVE_INSTANCE, *_RECONCILES), "lease_status.py: nobody holds the Lease yet"),
    Reason(NO_ACTIVE_INSTANCE, (ACTIVE_INSTANCE, *_STALLS), "lease_status.py: nobody for a lease duration"),
    Reason(READ_WRITE_MANY, (CHECKPOINT_SHARED,), "checkpoint_sharing.py: the claim can be shared"),
    Reason(CHECKPOINT_NOT_SHARED, (CHECKPOINT_SHARED,), "checkpoint_sharing.py: the claim is not RWX"),
    Reason(CHECKPOINT_CLAIM_NOT_FOUND, (CHECKPOINT_SHARED,), "checkpoint_sharing.py: no such claim"),
    # JmsBridge: the Kafka checks (kafka_checks/), Ready's reason too while the gate holds the bridge
    Reason(CHECKING_KAFKA, (KAFKA_READY, *_RECONCILES), "kafka_checks/gate.py: no check yet for this spec"),
    Reason(CREDENTIALS_NOT_FOUND, _KAFKA_FAILS, "handlers/kafka_checks.py: Secret, key or TLS file missing"),
    Reason(KAFKA_AUTHENTICATION_FAILED, _KAFKA_FAILS, "kafka_checks/probe.py: the SASL login refused"),
    Reason(KAFKA_TLS_FAILED, _KAFKA_FAILS, "kafka_checks/probe.py: the TLS handshake failed"),
    Reason(
        KAFKA_UNREACHABLE,
        (KAFKA_READY, READY, RECONCILING, STALLED),
        "kafka_checks/evaluation.py: no answer; Stalled once the grace period is over",
    ),
    Reason(TOPIC_NOT_FOUND, _KAFKA_FAILS, "kafka_checks/evaluation.py: a topic the bridge needs"),
    Reason(TOPIC_AUTHORIZATION_FAILED, _KAFKA_FAILS, "kafka_checks/evaluation.py: a topic's ACLs"),
    Reason(GROUP_AUTHORIZATION_FAILED, _KAFKA_FAILS, "kafka_checks/evaluation.py: a group's ACLs"),
    Reason(
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        _KAFKA_FAILS,
        "kafka_checks/evaluation.py: the transactional ids' ACLs",
    ),
    Reason(SCHEMA_REGISTRY_REFUSED, _KAFKA_FAILS, "kafka_checks/probe.py: the registry refused the bridge"),
    Reason(SCHEMA_INCOMPATIBLE, _KAFKA_FAILS, "kafka_checks/probe.py: a subject refused the bridge's schema"),
    Reason(
        SCHEMA_REGISTRY_UNREACHABLE,
        (KAFKA_READY, READY, RECONCILING, STALLED),
        "kafka_checks/evaluation.py: the registry did not answer; Stalled once the grace period is over",
    ),
    Reason(VERIFIED, (KAFKA_READY,), "kafka_checks/evaluation.py: the check passed"),
    # Both kinds: a spec that cannot run (also the Kafka client settings a check finds unusable)
    Reason(
        INVALID_SPEC,
        (*_ROUTE_REFUSED, KAFKA_READY),
        "acceptance.py, planning.py (a bridge's or route's spec); kafka_checks/evaluation.py (client config)",
    ),
    # JmsBridgeRoute (acceptance.py, then status.route_status)
    Reason(ACCEPTED, (ACCEPTED,), "status.py: the route is in effect"),
    Reason(IN_EFFECT, (READY,), "status.py: the route is in effect"),
    Reason(BRIDGE_NOT_FOUND, _ROUTE_REFUSED, "acceptance.py: no such JmsBridge"),
    Reason(BRIDGE_INVALID, (ACCEPTED, READY), "acceptance.py: the bridge's spec is invalid (no Stalled)"),
    Reason(DUPLICATE_ORDER, _ROUTE_REFUSED, "bridge_job/config/validation.py: an older route has the order"),
    Reason(INVALID_MATCH, _ROUTE_REFUSED, "bridge_job/config/validation.py: the match takes nothing"),
)

REASONS: Mapping[str, Reason] = {reason.name: reason for reason in _ALL}
