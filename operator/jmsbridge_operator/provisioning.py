"""Provisioning: the reconciler makes a bridge's identity (identity.py) before its applications run as it.

- The ServiceAccount, Role and RoleBindings are created; one that exists and is ours is replaced when it
  differs from what we render (a hand edit, a bridge id that changed the Role's names, no owner yet); one
  that is not ours (owned by something else, or neither owned nor labelled as the bridge's) is never
  taken over: the bridge waits, and an Event says why.
- The Lease and the key Secret are only created: the job writes the Lease, and a key is never overwritten.
  A key Secret found absent (deleted: a rotation, docs/security.md) is made anew; the new version of the
  Secret then rolls the bridge's applications as any rotated Secret does (secret_versions.py).
- What was written is remembered per bridge (the hash of the rendered objects), so a reconciliation at
  rest makes no request here; an operator restart checks everything once (a create each, answered 409).
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

from bridge_job.contract.clients import LEASES, SECRETS, ApiError, Kube, Resource
from jmsbridge_operator import metrics, naming
from jmsbridge_operator.identity import Identity, differs, with_key
from jmsbridge_operator.render import digest

logger = logging.getLogger("jmsbridge_operator")

KEY_BYTES: Final = 32
RESOURCES: Final = {
    "ServiceAccount": Resource("", "v1", "serviceaccounts"),
    "Role": Resource("rbac.authorization.k8s.io", "v1", "roles"),
    "RoleBinding": Resource("rbac.authorization.k8s.io", "v1", "rolebindings"),
    "Lease": LEASES,
    "Secret": SECRETS,
}


class NotOurs(Exception):
    """An object of the bridge's identity exists under our name and belongs to someone else."""


def owned_by(obj: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether `obj` is the bridge's: owned by it, or, owned by nothing, labelled as its (made offline
    from `jmsbridge render`, or before the bridge had a uid): then it is adopted (`differs`)."""
    meta = obj.get("metadata") or {}
    theirs = {o.get("uid") for o in meta.get("ownerReferences") or []}
    ours = {o.get("uid") for o in (desired.get("metadata") or {}).get("ownerReferences") or []}
    if theirs:
        return not ours or bool(theirs & ours)
    labels = meta.get("labels") or {}
    wanted = (desired.get("metadata") or {}).get("labels") or {}
    return all(labels.get(key) == wanted.get(key) for key in (naming.LABEL_MANAGED_BY, naming.LABEL_BRIDGE))


class Provisioning:
    """What identity each bridge was last given; thread-safe (reconciliations run in kopf's threads)."""

    def __init__(self, kube: Kube, random_key: Callable[[int], bytes] = secrets.token_bytes) -> None:
        self.kube = kube
        self.random_key = random_key
        self._guard = threading.Lock()
        self._made: dict[tuple[str, str], str] = {}

    def forget(self, key: tuple[str, str]) -> None:
        with self._guard:
            self._made.pop(key, None)

    def ensure(self, namespace: str, key: tuple[str, str], wanted: Identity, key_absent: bool) -> bool:
        """Make what is missing of `wanted`; `key_absent`: the key Secret was read and is gone. Whether
        it created the key Secret."""
        version = digest([*wanted.objects, wanted.lease, wanted.key_secret])
        with self._guard:
            if self._made.get(key) == version and not key_absent:
                return False
        for desired in wanted.objects:
            self._create_or_replace(namespace, desired)
        if wanted.lease is not None:
            self._create(namespace, wanted.lease)
        created = self._create(namespace, with_key(wanted.key_secret, self.random_key(KEY_BYTES)))
        with self._guard:
            self._made[key] = version
        return created

    def _create(self, namespace: str, body: dict[str, Any]) -> bool:
        """Create `body` unless an object of its name exists; whether it did."""
        kind = str(body["kind"])
        try:
            self.kube.create(RESOURCES[kind], namespace, body)
        except ApiError as error:
            if error.conflict:
                return False
            raise
        logger.info("create %s %s/%s", kind, namespace, body["metadata"]["name"])
        metrics.WRITES.labels(kind, "create").inc()
        return True

    def _create_or_replace(self, namespace: str, desired: dict[str, Any]) -> None:
        if self._create(namespace, desired):
            return
        kind, name = str(desired["kind"]), str(desired["metadata"]["name"])
        resource = RESOURCES[kind]
        existing = self.kube.get(resource, namespace, name)
        if existing is None:  # deleted meanwhile: the next reconciliation creates it
            raise ApiError(409, "Conflict", f"{kind} {name} changed meanwhile")
        if not owned_by(existing, desired):
            raise NotOurs(
                f"{kind} {name} already exists and is not owned by this bridge; delete or rename it"
            )
        if not differs(existing, desired):
            return
        metadata = {**existing["metadata"], **desired["metadata"]}
        metadata.pop("managedFields", None)
        self.kube.replace(resource, namespace, {**existing, **desired, "metadata": metadata})
        logger.info("replace %s %s/%s", kind, namespace, name)
        metrics.WRITES.labels(kind, "replace").inc()
