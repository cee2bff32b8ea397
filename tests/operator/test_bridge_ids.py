"""A bridge id is one bridge's (jmsbridge_operator/bridge_ids.py), tried as a bridge author in another
namespace would: the same name as a bridge in `apps`, or another name with its spec.bridgeId. The real
operator, on the real API server, serving both namespaces as the chart deploys it."""

from __future__ import annotations

from typing import Any

from jmsbridge_operator.status import find_condition

from tests.apiserver.client import KubeApi
from tests.operator.fixtures import chart_operator
from tests.operator.helpers import GROUP_VERSION, NAMESPACE, SPARK_VERSION, route, simple_bridge

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


def test_a_bridge_id_taken_in_another_namespace_is_refused_naming_the_holder(
    cluster: KubeApi, no_kafka_checks: None
) -> None:
    cluster.ensure_namespace(OTHER)
    with chart_operator(cluster, f"watchNamespaces={{{NAMESPACE},{OTHER}}}"):
        first = bridge_in(NAMESPACE)
        cluster.create(first)
        cluster.create(route("out"))
        cluster.wait_for(
            lambda: applications(cluster, NAMESPACE) == ["simple-primary"], what="the first runs"
        )

        # The same name, and another name with the same spec.bridgeId: both refused, nothing rendered.
        cluster.create(bridge_in(OTHER))
        cluster.create(bridge_in(OTHER, "sneaky", bridgeId="simple"))
        for name in ("simple", "sneaky"):
            said = cluster.wait_for(lambda n=name: stalled(cluster, OTHER, n), what=f"{OTHER}/{name} refused")  # type: ignore[misc]
            assert f"bridge id 'simple' is JmsBridge {NAMESPACE}/simple's, which was there first" in said
            assert "Set spec.bridgeId to an id of this bridge's own" in said
        assert applications(cluster, OTHER) == []
        assert stalled(cluster, NAMESPACE, "simple") is None  # the holder runs on

        # The holder gone, the id is free: the older of the two others takes it, the younger stays refused.
        cluster.delete(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE)
        cluster.wait_for(lambda: applications(cluster, OTHER) == ["simple-primary"], what="the next one runs")
        said = cluster.wait_for(lambda: stalled(cluster, OTHER, "sneaky"), what="the younger still refused")
        assert f"JmsBridge {OTHER}/simple's" in said
