"""Who owns what the job creates: the JmsBridge it runs for, so that deleting the bridge deletes it too.

The job creates its Lease (`<bridgeId>-jms-bridge`) and its health ConfigMap itself; without an owner
they would outlive their bridge, and a bridge re-created under the same name would inherit the old
failovers and holder. The operator passes the bridge's name and uid to the driver
(`ENV_OWNER_NAME`, `ENV_OWNER_UID`); the job puts them in an ownerReference of each object it creates,
and the garbage collector deletes them with the bridge. Run outside the operator (`jmsbridge job`
locally), the variables are absent and the objects have no owner.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

from bridge_job.config import API_GROUP, API_VERSION, BRIDGE_KIND, ENV_OWNER_NAME, ENV_OWNER_UID

# On what the job creates, the bridge id: the operator watches exactly these (its Lease, its health report).
LABEL_BRIDGE_ID: Final = f"{API_GROUP}/bridge-id"


def owner_references(env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The bridge as the owner (not the controller: the job writes these objects, not the operator)."""
    env = os.environ if env is None else env
    name, uid = env.get(ENV_OWNER_NAME, "").strip(), env.get(ENV_OWNER_UID, "").strip()
    if not (name and uid):
        return []
    return [{"apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": BRIDGE_KIND, "name": name, "uid": uid}]


def owned(metadata: dict[str, Any], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`metadata` with the owner's reference, when the job knows its owner."""
    references = owner_references(env)
    return {**metadata, "ownerReferences": references} if references else metadata
