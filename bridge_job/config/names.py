"""The names the operator and the job agree on: Kafka groups and transactional ids, the Lease, the health
ConfigMap, the config mount, environment variables, and the JMS health states.

The active/standby election: the instances of a bridge compete for one coordination.k8s.io Lease in the
bridge's namespace; its holder is the active instance (kube/leadership.py). The operator creates the
Lease, and the bridge's own service account may get and update it, and no other.
"""

from __future__ import annotations

import enum
import hashlib
import re

_NOT_ID_CHARS = re.compile(r"[^a-z0-9-]+")
MAX_BRIDGE_ID = 40  # schema.BRIDGE_ID_PATTERN


def default_bridge_id(namespace: str | None, name: str) -> str:
    """A bridge's id when spec.bridgeId sets none: `<namespace>-<name>`, or `name` outside Kubernetes.

    The id names what is global per Kafka and NATS cluster (journal topic, groups, transactional ids,
    reply subjects), while a name is unique only in its namespace: with the namespace in it, two teams'
    bridges of one name do not collide. An id that would not be a DNS label of at most 40 characters
    (long or dotted names) is shortened and ends in a hash of the whole, so it stays one of its own.
    Bridges that ran before keep the id they ran as (the operator pins it in their status).
    """
    whole = f"{namespace}-{name}" if namespace else name
    label = _NOT_ID_CHARS.sub("-", whole.lower()).strip("-") or "bridge"
    if label == whole and len(label) <= MAX_BRIDGE_ID:
        return label
    tag = hashlib.sha256(whole.encode()).hexdigest()[:6]
    return f"{label[: MAX_BRIDGE_ID - len(tag) - 1].rstrip('-')}-{tag}"


def kafka_name_prefix(bridge_id: str) -> str:
    """What every consumer group and transactional id of the bridge starts with (one prefixed ACL)."""
    return f"{bridge_id}.jms-bridge."


def journal_reader_group(bridge_id: str) -> str:
    return f"{kafka_name_prefix(bridge_id)}journal-reader"


def ingress_group(bridge_id: str) -> str:
    return f"{kafka_name_prefix(bridge_id)}ingress"


def transactional_id_prefix(bridge_id: str) -> str:
    return kafka_name_prefix(bridge_id)


CONFIG_MOUNT_PATH = "/etc/jmsbridge"


# Where the job's default JMS classpath looks for jars (`ingest.DEFAULT_CLASSPATH`), and where
# `jms.clientLibraries` are copied to.
JMS_LIBRARY_DIR = "/opt/jmsbridge/jms-lib"


JOB_MAIN_FILE = "local:///opt/jmsbridge/jmsbridge-job.py"


ENV_JMS_USERNAME = "JMSBRIDGE_JMS_USERNAME"


ENV_JMS_PASSWORD = "JMSBRIDGE_JMS_PASSWORD"


# The passwords of spec.jms.tls's stores, from their Secrets.
ENV_JMS_TRUST_STORE_PASSWORD = "JMSBRIDGE_JMS_TRUST_STORE_PASSWORD"


ENV_JMS_KEY_STORE_PASSWORD = "JMSBRIDGE_JMS_KEY_STORE_PASSWORD"


ENV_KAFKA_USERNAME = "JMSBRIDGE_KAFKA_USERNAME"


ENV_KAFKA_PASSWORD = "JMSBRIDGE_KAFKA_PASSWORD"


# spec.kafka.schemaRegistry.credentialsSecretRef's HTTP Basic username and password.
ENV_REGISTRY_USERNAME = "JMSBRIDGE_REGISTRY_USERNAME"
ENV_REGISTRY_PASSWORD = "JMSBRIDGE_REGISTRY_PASSWORD"


ENV_NATS_USERNAME = "JMSBRIDGE_NATS_USERNAME"


ENV_NATS_PASSWORD = "JMSBRIDGE_NATS_PASSWORD"


ENV_NATS_TOKEN = "JMSBRIDGE_NATS_TOKEN"


ENV_NATS_CREDS = "JMSBRIDGE_NATS_CREDS"  # the text of a .creds file


# The JmsBridge a job runs for, set by the operator in the driver: what the job creates in the cluster
# (its Lease, its health ConfigMap) is owned by it and deleted with it (bridge_job/kube/ownership.py).
ENV_OWNER_NAME = "JMSBRIDGE_OWNER_NAME"
ENV_OWNER_UID = "JMSBRIDGE_OWNER_UID"


def lease_name(bridge_id: str) -> str:
    return f"{bridge_id}-jms-bridge"


def health_config_map_name(bridge_id: str) -> str:
    """The ConfigMap where the job reports its brokers' state to the operator (bridge_job/kube/health.py)."""
    return f"{bridge_id}-jms-bridge-health"


class HealthKey(enum.StrEnum):
    """The words of an instance's document in the health ConfigMap: the job writes them
    (bridge_job/kube/health.py), the operator reads them (jmsbridge_operator/job_health.py)."""

    JMS = "jms"  # a system's section: its state, since when, and while failing why and the patience
    KAFKA = "kafka"
    NATS = "nats"
    REGISTRY = "schemaRegistry"
    STATE = "state"
    SINCE = "since"
    ERROR = "error"
    PATIENCE = "patienceSeconds"
    STOPPED = "stopped"  # why the job stopped: its reason and message
    REASON = "reason"
    MESSAGE = "message"
    CHECKPOINT_RESET = "checkpointReset"  # a reset the operator asked for, done: its id, to and summary
    RESET_ID = "id"
    RESET_TO = "to"
    RESET_SUMMARY = "summary"
    RECORDS_LOST = "recordsLost"  # records lost to retention and skipped, per topic
    UPDATED = "updated"


# The JMS states the job writes there, and the operator reads.
JMS_RECONNECTING = "Reconnecting"


JMS_CONNECTED = "Connected"

# Why the job stopped, when it says (`{"stopped": {"reason": ..., "message": ...}}`): the operator's reason.
CHECKPOINT_MISMATCH = "CheckpointMismatch"
JMS_AUTHENTICATION_FAILED = "JmsAuthenticationFailed"  # the JMS broker refused the bridge's login
JMS_TLS_FAILED = "JmsTlsFailed"  # a TLS store unreadable, or the handshake with the JMS broker failed


def lease_holder_identity(instance: str, pod: str) -> str:
    """The Lease's `holderIdentity`: `<instance>/<pod>`, so a reader sees which instance is active."""
    return f"{instance}/{pod}"
