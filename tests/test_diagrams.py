"""The docs' pictures (Mermaid, rendered by GitHub) name what the code names: the architecture in README.md
and the failover sequence in docs/failover.md, for a bridge `orders`. A rename in the code fails here."""

from __future__ import annotations

import re
from pathlib import Path

from jmsbridge_operator import naming

from bridge_job.config.names import health_config_map_name, lease_holder_identity, lease_name

REPO = Path(__file__).resolve().parents[1]
BRIDGE = "orders"  # its bridge id is its name


def diagrams(path: Path) -> list[str]:
    return re.findall(r"```mermaid\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_architecture_names_the_objects_of_a_bridge() -> None:
    (diagram,) = diagrams(REPO / "README.md")
    assert diagram.startswith("flowchart ")
    for name in (
        naming.config_map_name(BRIDGE),
        naming.application_name(BRIDGE, naming.PRIMARY),
        naming.application_name(BRIDGE, naming.SECONDARY),
        lease_name(BRIDGE),
        health_config_map_name(BRIDGE),
        f"{BRIDGE}.jms-bridge.journal",  # JobConfig.journal_topic's default
        "JmsBridge",
        "JmsBridgeRoutes",
    ):
        assert name in diagram, name


def test_the_failover_sequence_names_the_lease_its_holders_and_the_journal() -> None:
    (diagram,) = diagrams(REPO / "docs" / "failover.md")
    assert diagram.startswith("sequenceDiagram\n")
    for instance in (naming.PRIMARY, naming.SECONDARY):
        driver = f"{naming.application_name(BRIDGE, instance)}-driver"  # the spark-operator's driver pod
        assert f"holderIdentity {lease_holder_identity(instance, driver)}" in diagram
    assert f"Lease<br/>{lease_name(BRIDGE)}" in diagram
    assert f"activeInstance {naming.application_name(BRIDGE, naming.SECONDARY)}" in diagram
    # Mermaid ends a sequence diagram's statement at a semicolon: none inside the text.
    assert ";" not in diagram
