"""The contract's clients (bridge_job/contract/__init__.py says what the contract is): the Kubernetes
transport, the Lease protocol and the Kafka client settings the operator shares with the job.
"""

from __future__ import annotations

from bridge_job.kafka.clients import KafkaConfig, KafkaCredentials, client_settings, producer_settings
from bridge_job.kafka.refusals import Refusal, refusal, what_to_fix
from bridge_job.kafka.registry import Registration, register_once
from bridge_job.kafka.registry import client_settings as registry_settings
from bridge_job.kube.api import CONFIG_MAPS, LEASES, SECRETS, ApiError, Kube, Resource
from bridge_job.kube.leadership import (
    EXIT_LEADERSHIP_LOST,
    KubernetesLeases,
    Leadership,
    LeaseRefused,
    pod_name,
)

# The Kubernetes transport the operator shares with the job: one client, the same timeouts and errors.
__all__ = ["CONFIG_MAPS", "LEASES", "SECRETS", "ApiError", "Kube", "Resource"]
# The job's Lease protocol, with which the operator's own replicas elect their leader as a bridge's do.
__all__ += [
    "EXIT_LEADERSHIP_LOST",
    "KubernetesLeases",
    "Leadership",
    "LeaseRefused",
    "pod_name",
]
# Kafka client settings and refusals: the operator's checks connect, and word a refusal, as the job does.
__all__ += [
    "KafkaConfig",
    "KafkaCredentials",
    "Refusal",
    "client_settings",
    "producer_settings",
    "refusal",
    "what_to_fix",
]
# The schema registry's client settings and what a registration's answer means: the checks register the
# bridge's schemas as the job would.
__all__ += ["Registration", "register_once", "registry_settings"]
