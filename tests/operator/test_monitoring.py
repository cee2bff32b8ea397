"""The chart's Grafana dashboard and PrometheusRule: rendered behind their values, and every metric they
use is one the bridge job or the operator defines (a renamed metric fails here, not on a dashboard)."""

from __future__ import annotations

import json
import re
from typing import Any

from jmsbridge_operator import metrics as operator_metrics
from prometheus_client import REGISTRY, CollectorRegistry

from bridge_job.supervision.telemetry import Metrics
from tests.operator.test_chart import MONITORING, one, template

METRIC = re.compile(r"\bjmsbridge_[a-z0-9_]+\b(?!\*)")  # not a pattern: jmsbridge_operator_*
ALERTS = {
    "JmsBridgeNotReady",
    "JmsBridgeNoActiveInstance",
    "JmsBridgeFailover",
    "JmsBridgeJournalLagGrowing",
    "JmsBridgeIngressLagGrowing",
    "JmsBridgeDeadLettersRising",
    "JmsBridgeDisconnected",
}
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def defined(registry: CollectorRegistry) -> dict[str, str]:
    """The series names a registry's jmsbridge_ metrics expose, each with its metric's name."""
    names: dict[str, str] = {}
    for family in registry.collect():
        if family.name.startswith("jmsbridge_"):
            names |= {family.name + suffix: family.name for suffix in SUFFIXES[family.type]}
    return names


def code_metrics() -> dict[str, str]:
    assert operator_metrics.BRIDGE_READY is not None  # the operator's metrics are registered on import
    return defined(Metrics("any").registry) | defined(REGISTRY)


def rendered() -> tuple[dict[str, Any], dict[str, Any]]:
    """The dashboard (its JSON, from the ConfigMap) and the PrometheusRule's spec, as helm renders them."""
    documents = template(*MONITORING)
    config_map = next(d for d in documents if d["kind"] == "ConfigMap" and "jms-bridge.json" in d["data"])
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"  # what Grafana's sidecar loads
    rule = one(documents, "PrometheusRule")
    return json.loads(config_map["data"]["jms-bridge.json"]), rule["spec"]


def queries(dashboard: dict[str, Any]) -> list[str]:
    """The PromQL of the dashboard's panels and of its variables."""
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    variables = [v["query"]["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return exprs + variables


def test_the_dashboard_and_the_alerts_are_off_by_default_and_render_when_enabled() -> None:
    defaults = template()
    config_maps = [d for d in defaults if d["kind"] == "ConfigMap"]
    assert not [d for d in defaults if d["kind"] == "PrometheusRule"]
    assert not [d for d in config_maps if "jms-bridge.json" in d["data"]]
    dashboard, rules = rendered()
    assert dashboard["uid"] == "jms-bridge" and dashboard["panels"]
    (group,) = rules["groups"]
    assert {rule["alert"] for rule in group["rules"]} == ALERTS
    assert all(rule["labels"]["severity"] and rule["annotations"]["summary"] for rule in group["rules"])


def test_every_metric_they_use_is_one_the_code_defines() -> None:
    dashboard, rules = rendered()
    known = code_metrics()
    used_by_dashboard = {name for query in queries(dashboard) for name in METRIC.findall(query)}
    used_by_alerts = {name for rule in rules["groups"][0]["rules"] for name in METRIC.findall(rule["expr"])}
    assert used_by_dashboard and used_by_alerts
    assert sorted((used_by_dashboard | used_by_alerts) - known.keys()) == []
    # Also where the dashboard's descriptions name one.
    assert sorted(set(METRIC.findall(json.dumps(dashboard))) - known.keys()) == []
    # The other way round: every metric of the code has a panel.
    assert sorted(set(known.values()) - {known[name] for name in used_by_dashboard}) == []


def test_a_metric_the_code_does_not_define_is_caught() -> None:
    known = code_metrics()
    assert "jmsbridge_routed_messages_total" in known and "jmsbridge_egress_latency_seconds_bucket" in known
    assert "jmsbridge_routing_success_rate" not in known  # a gauge of old, gone
    assert "jmsbridge_egress_latency_seconds" not in known  # a histogram is read through its series
