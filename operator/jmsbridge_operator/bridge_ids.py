"""One bridge per bridge id, across every namespace the operator serves.

A bridge's id names what is global per Kafka and NATS cluster: its journal topic, consumer groups,
transactional ids and NATS reply queue group, and in its namespace its Lease and health report. Two bridges
with one id fence each other's transactions, join each other's groups and take each other's answers, and
nothing else notices; and whoever may write a JmsBridge in one namespace could do so to a bridge in another
on purpose. So the operator refuses a bridge whose id an older bridge holds (by creation time, then
namespace and name), naming the holder; the holder runs on untouched.

`BridgeIds` holds every served bridge's id as the watch last saw it (main.py's index function feeds it, before
any handler runs); the rest is pure.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from bridge_job.config import default_bridge_id
from jmsbridge_operator.condition_catalogue import INVALID_SPEC
from jmsbridge_operator.conditions import Problem


def _of(body: Mapping[str, Any], part: str) -> Mapping[str, Any]:
    value = body.get(part)
    return value if isinstance(value, Mapping) else {}


def ran_as(body: Mapping[str, Any]) -> str | None:
    """The id the bridge ran as, which its status records from its first reconciliation on."""
    return str(_of(body, "status").get("bridgeId") or "") or None


def effective_id(body: Mapping[str, Any]) -> str:
    """The id a bridge runs (or ran) as: the one its status records, else spec.bridgeId, else the default
    for its namespace and name (bridge_job.config.default_bridge_id)."""
    metadata = _of(body, "metadata")
    named = _of(body, "spec").get("bridgeId")
    return ran_as(body) or str(named or default_bridge_id(metadata.get("namespace"), str(metadata["name"])))


Seniority = tuple[str, str, str]  # (creationTimestamp, namespace, name): the older first
Claim = tuple[str, Seniority]  # (bridge id, seniority)


def claim_of(body: Mapping[str, Any]) -> Claim:
    metadata = _of(body, "metadata")
    created = str(metadata.get("creationTimestamp") or "")
    return effective_id(body), (created, str(metadata.get("namespace")), str(metadata["name"]))


def id_holder(body: Mapping[str, Any], claims: Iterable[Claim]) -> str | None:
    """`namespace/name` of the oldest other bridge of `claims` that has `body`'s id before it, if any."""
    mine, seniority = claim_of(body)
    older = [theirs for bridge_id, theirs in claims if bridge_id == mine and theirs < seniority]
    return f"{min(older)[1]}/{min(older)[2]}" if older else None


class BridgeIds:
    """The id of every bridge the operator serves, with its seniority, by (namespace, name)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._claims: dict[tuple[str, str], Claim] = {}

    def seen(self, body: Mapping[str, Any]) -> None:
        claim = claim_of(body)
        with self._lock:
            self._claims[claim[1][1:]] = claim

    def gone(self, body: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Forget a bridge; the others of its id, which may run now, by (namespace, name)."""
        bridge_id, seniority = claim_of(body)
        with self._lock:
            self._claims.pop(seniority[1:], None)
            return sorted(key for key, (other, _) in self._claims.items() if other == bridge_id)

    def holder(self, body: Mapping[str, Any]) -> str | None:
        with self._lock:
            claims = list(self._claims.values())
        return id_holder(body, claims)


def id_taken(body: Mapping[str, Any], holder: str) -> Problem:
    bridge_id = effective_id(body)
    return Problem(
        INVALID_SPEC,
        "spec.bridgeId",
        f"spec.bridgeId: bridge id {bridge_id!r} is JmsBridge {holder}'s, which was there first: its journal "
        "topic, consumer groups, transactional ids and NATS reply queue group would be shared, and the two "
        "bridges would fence each other. Set spec.bridgeId to an id of this bridge's own",
    )
