"""Builders for bridge configs in tests."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from bridge_job.config import JmsBridge, JmsBridgeRoute, JobConfig, job_config


def bridge(name: str = "orders", bootstrap: str = "127.0.0.1:9092", **spec: Any) -> JmsBridge:
    body: dict[str, Any] = {
        "jms": {
            "connectionFactory": {"className": "org.apache.activemq.ActiveMQConnectionFactory"},
            "sources": [{"queue": "orders.in"}],
        },
        "kafka": {"bootstrapServers": bootstrap},
    }
    body.update(spec)
    return JmsBridge.model_validate(
        {
            "apiVersion": "jmsbridge.dev/v1alpha1",
            "kind": "JmsBridge",
            "metadata": {"name": name},
            "spec": body,
        }
    )


def route(name: str, topic: str, bridge_name: str = "orders", **spec: Any) -> JmsBridgeRoute:
    return JmsBridgeRoute.model_validate(
        {
            "apiVersion": "jmsbridge.dev/v1alpha1",
            "kind": "JmsBridgeRoute",
            "metadata": {"name": name},
            "spec": {"bridgeRef": {"name": bridge_name}, "kafkaTopic": topic, **spec},
        }
    )


def config(*routes: JmsBridgeRoute, **bridge_spec: Any) -> JobConfig:
    return job_config(bridge(**bridge_spec), routes)


def progress(observation: str, *rows: Mapping[str, Any], **fields: Any) -> SimpleNamespace:
    """A query's progress report as the driver reads it: the tasks' summary rows observed under
    `observation` (telemetry.FlowMetrics.observation), no source offsets unless `fields` give them."""
    report = {"sources": [], "batchId": 1, "batchDuration": 0, "durationMs": {}} | fields
    return SimpleNamespace(observedMetrics={observation: {"tasks": list(rows)}}, **report)
