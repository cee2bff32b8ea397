"""Which Secrets a bridge may use: those their owner marked for it.

Whoever may write a JmsBridge names Secrets by name: its pods would mount them, and the operator's Kafka
checks would send their SASL keys to whatever bootstrapServers the bridge chose. A Secret of the namespace
is no more the bridge author's than the namespace is, so a bridge may use a Secret only when the Secret
says so: the annotation `jmsbridge.dev/bridges` lists the bridges that may (comma-separated names), or is
`*` for every bridge of the namespace. The platform team can waive the rule (the chart's
bridgePolicy.unmarkedSecrets). A bridge's own key Secret (identity.py) is its own. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from bridge_job.config import API_GROUP

ANNOTATION: Final = f"{API_GROUP}/bridges"
EVERY_BRIDGE: Final = "*"


def bridges_of(secret: Mapping[str, Any] | None) -> frozenset[str]:
    """The bridges a Secret is marked for (none: unmarked, or absent)."""
    annotations = ((secret or {}).get("metadata") or {}).get("annotations") or {}
    return frozenset(name.strip() for name in str(annotations.get(ANNOTATION, "")).split(",") if name.strip())


def marked_for(bridges: frozenset[str], bridge: str) -> bool:
    return EVERY_BRIDGE in bridges or bridge in bridges


def not_marked(secret: str, bridge: str, where: str) -> str:
    return (
        f"Secret {secret} ({where}) is not marked for bridge {bridge}: its owner allows it with the "
        f"annotation {ANNOTATION}={bridge} (a comma-separated list of bridges, or {EVERY_BRIDGE} for every "
        "bridge of the namespace)"
    )
