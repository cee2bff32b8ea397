"""A bridge id is one bridge's (jmsbridge_operator/bridge_ids.py), tried as a bridge author in another
namespace would: the same name as a bridge in `apps` (a default id of its own), or another name with its
spec.bridgeId (refused); and a bridge that ran before the default id had the namespace in it keeps the id
it ran as. The real operator, on the real API server, serving both namespaces as the chart deploys it."""

from __future__ import annotations

from typing import Any

import yaml
from jmsbridge_operator.status import find_condition

from testbed.apiserver.client import KubeApi
from testbed.resources import GROUP_VERSION, NAMESPACE, simple_bridge
from tests.operator.fixtures import chart_operator
from tests.operator.helpers import SPARK_VERSION, route

OTHER = "payments"


def bridge_in(namespace: str, name: str = "simple", **spec: Any) -> dict[str, Any]:
    body = simple_bridge(name)
    body["metadata"]["namespace"] = namespace
    body["spec"].update(spec)
    return body


def stalled(kube: KubeApi, namespace: str, name: str) -> str | None:
    """The Stalled condition's message, once the bridge is stalled."""
    body = kube.get(GROUP_VERSION, "JmsBridge", name, namespace) or {}
    condition = find_condition(body.get("status"), "Stalled")
    return str(condition["message"]) if condition and condition["status"] == "True" else None


def applications(kube: KubeApi, namespace: str) -> list[str]:
    return sorted(a["metadata"]["name"] for a in kube.list(SPARK_VERSION, "SparkApplication", namespace))


def bridge_id(kube: KubeApi, namespace: str, name: str) -> str | None:
    """The id the bridge runs as: its status's, and the one its job's config has."""
    body = kube.get(GROUP_VERSION, "JmsBridge", name, namespace) or {}
    config_map = kube.get("v1", "ConfigMap", f"{name}-config", namespace) or {}
    texts = list((config_map.get("data") or {}).values())  # one file: the spec's (config_files.py)
    job = yaml.safe_load(texts[0]) if len(texts) == 1 else {}
    said = (body.get("status") or {}).get("bridgeId")
    return str(said) if said and said == job.get("bridgeId") else None


def test_a_bridge_id_taken_in_another_namespace_is_refused_naming_the_holder(
    cluster: KubeApi, no_kafka_checks: None
) -> None:
    cluster.ensure_namespace(OTHER)
    with chart_operator(cluster, f"watchNamespaces={{{NAMESPACE},{OTHER}}}"):
        cluster.create(bridge_in(NAMESPACE))
        cluster.create(route("out"))
        cluster.wait_for(
            lambda: applications(cluster, NAMESPACE) == ["simple-primary"], what="the first runs"
        )
        held = f"{NAMESPACE}-simple"
        assert cluster.wait_for(lambda: bridge_id(cluster, NAMESPACE, "simple"), what="its id") == held

        # The same name in another namespace is another bridge, with an id of its own; another name with
        # the first one's id, written out, is refused, and nothing is rendered for it.
        cluster.create(bridge_in(OTHER))
        cluster.create(bridge_in(OTHER, "sneaky", bridgeId=held))
        said = cluster.wait_for(lambda: stalled(cluster, OTHER, "sneaky"), what=f"{OTHER}/sneaky refused")
        assert f"bridge id {held!r} is JmsBridge {NAMESPACE}/simple's, which was there first" in said
        assert "Set spec.bridgeId to an id of this bridge's own" in said
        assert (
            cluster.wait_for(lambda: bridge_id(cluster, OTHER, "simple"), what="its id") == f"{OTHER}-simple"
        )
        assert applications(cluster, OTHER) == ["simple-primary"]
        assert stalled(cluster, NAMESPACE, "simple") is None  # the holder runs on

        # The holder gone, the id is free: the one refused takes it.
        cluster.delete(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE)
        cluster.wait_for(lambda: stalled(cluster, OTHER, "sneaky") is None, what="the id taken over")
        assert cluster.wait_for(lambda: bridge_id(cluster, OTHER, "sneaky"), what="its id") == held


def test_a_bridge_that_ran_before_keeps_the_id_it_ran_as(cluster: KubeApi, no_kafka_checks: None) -> None:
    """Its status says the id (an operator before this release recorded its name there): its journal topic,
    groups and Lease keep their names, whatever the default is now."""
    cluster.create(bridge_in(NAMESPACE, "legacy"))
    cluster.patch_status(GROUP_VERSION, "JmsBridge", "legacy", NAMESPACE, {"bridgeId": "legacy"})
    with chart_operator(cluster, f"watchNamespaces={{{NAMESPACE}}}"):
        cluster.create(route("out", "legacy"))
        cluster.wait_for(lambda: applications(cluster, NAMESPACE) == ["legacy-primary"], what="it runs")
        assert cluster.wait_for(lambda: bridge_id(cluster, NAMESPACE, "legacy"), what="its id") == "legacy"
