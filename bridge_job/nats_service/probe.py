"""The NATS flow's health: NatsConnected in the bridge's status and `jmsbridge_connected{system="nats"}`,
from the driver's probe of the servers (nats/probe.py), for a bridge whose routes use NATS."""

from __future__ import annotations

from bridge_job.config import JobConfig
from bridge_job.faults.outages import OutageListener
from bridge_job.nats.probe import NatsProbe


def nats_probe(config: JobConfig, listener: OutageListener) -> NatsProbe:
    assert config.bridge.nats is not None  # JobConfig requires it for routes that use NATS
    return NatsProbe(config.bridge.nats, listener)
