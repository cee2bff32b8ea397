"""Kubernetes resources as the operator finds them in a cluster: a small JmsBridge, a bridge's Lease as
its jobs hold it. The operator's tests arrange them in the API server, and so does the benchmark of the
operator at scale (bench/operator_scale.py), hundreds at a time."""

from __future__ import annotations

import copy
from typing import Any

GROUP_VERSION = "jmsbridge.dev/v1alpha1"
NAMESPACE = "apps"

# A standby pair shares its checkpoint through a ReadWriteMany claim (checkpoint_sharing.py).
CHECKPOINT_CLAIM = "bridge-checkpoints"
STANDBY: dict[str, Any] = {
    "failover": {"standby": True},
    "spark": {"checkpoint": {"persistentVolumeClaim": CHECKPOINT_CLAIM}},
}


def held_lease(
    bridge_id: str, holder: str | None, transitions: int = 0, duration: int = 300, namespace: str = NAMESPACE
) -> dict[str, Any]:
    """A bridge's Lease as its jobs write it: `holder` (`<instance>/<pod>`, None: released) took it
    `transitions` times and renewed it now; long enough (`duration`) not to run out during a test."""
    from bridge_job.config import lease_name
    from bridge_job.kube.leadership import micro_time
    from bridge_job.kube.ownership import LABEL_BRIDGE_ID

    now = micro_time()
    spec: dict[str, Any] = {
        "leaseDurationSeconds": duration,
        "acquireTime": now,
        "renewTime": now,
        "leaseTransitions": transitions,
    }
    if holder:
        spec["holderIdentity"] = holder
    labels = {LABEL_BRIDGE_ID: bridge_id}
    metadata = {"name": lease_name(bridge_id), "namespace": namespace, "labels": labels}
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}


def simple_bridge(name: str = "simple", *, standby: bool = False) -> dict[str, Any]:
    """A small bridge: ActiveMQ queue in, plaintext Kafka out; `standby` with its checkpoint claim."""
    body: dict[str, Any] = {
        "apiVersion": GROUP_VERSION,
        "kind": "JmsBridge",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "jms": {
                "connectionFactory": {
                    "className": "org.apache.activemq.ActiveMQConnectionFactory",
                    "properties": {"brokerURL": "tcp://amq:61616"},
                },
                "sources": [{"queue": "in.orders"}, {"queue": "in.prices"}],
            },
            "kafka": {"bootstrapServers": "kafka:9092"},
            "failover": {"standby": standby},
        },
    }
    if standby:
        body["spec"].update(copy.deepcopy(STANDBY))
    return body
