"""The names the operator and the job agree on: Kafka groups and transactional ids, the Lease, the health
ConfigMap, the config mount, environment variables, and the JMS health states.

The active/standby election: the instances of a bridge compete for one coordination.k8s.io Lease in the
bridge's namespace; its holder is the active instance (kube/leadership.py). The operator creates the
Lease, and the bridge's own service account may get and update it, and no other.
"""

from __future__ import annotations


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


ENV_KAFKA_USERNAME = "JMSBRIDGE_KAFKA_USERNAME"


ENV_KAFKA_PASSWORD = "JMSBRIDGE_KAFKA_PASSWORD"


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


# The JMS states the job writes there, and the operator reads.
JMS_RECONNECTING = "Reconnecting"


JMS_CONNECTED = "Connected"

# Why the job stopped, when it says (`{"stopped": {"reason": ..., "message": ...}}`): the operator's reason.
CHECKPOINT_MISMATCH = "CheckpointMismatch"


def lease_holder_identity(instance: str, pod: str) -> str:
    """The Lease's `holderIdentity`: `<instance>/<pod>`, so a reader sees which instance is active."""
    return f"{instance}/{pod}"
