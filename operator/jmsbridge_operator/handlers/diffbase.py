"""What kopf remembers of a bridge it handled: a digest of it, not a copy.

kopf compares an object with the last state it handled to tell a change (an update handler) from a
repeated event. By default it keeps that state as a copy of the whole spec in an annotation
(`last-handled-configuration`): a credential in a bridge's spec (waived by
`spec.security.allowInlineCredentials`) would then be copied into metadata, readable wherever the
object is. Our bridge handlers reconcile from a fresh look at the cluster and never read kopf's `old` or
`diff`, so a digest is enough: when it matches, the bridge is what was handled (no diff); when it does
not, kopf sees a change and runs the update handler.

Routes get no diff-base at all: the operator follows them with `on.event` (handlers/routes.py); a route
handled by an older operator keeps its copy. A bridge handled by an older operator keeps its copy until
its next change, when the digest replaces it.
"""

from __future__ import annotations

from typing import Any, cast

import kopf

from jmsbridge_operator import naming
from jmsbridge_operator.render import digest

COPY_KEY = "last-handled-configuration"
DIGEST_KEY = "last-handled-digest"
DIGEST_FIELD = "digest"


class BridgeDigestStorage(kopf.AnnotationsDiffBaseStorage):
    def __init__(self) -> None:
        super().__init__(prefix=naming.ANNOTATION_PREFIX, key=COPY_KEY)
        self._copies = kopf.AnnotationsDiffBaseStorage(prefix=naming.ANNOTATION_PREFIX, key=COPY_KEY)

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> kopf.BodyEssence:
        essence = super().build(body=body, extra_fields=extra_fields)
        annotations = (essence.get("metadata") or {}).get("annotations") or {}
        annotations.pop(f"{naming.ANNOTATION_PREFIX}/{DIGEST_KEY}", None)  # our own record is no change
        self.remove_empty_stanzas(essence)
        return essence

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        if not _is_bridge(body):
            return self._copies.fetch(body=body)
        recorded = body.metadata.annotations.get(f"{naming.ANNOTATION_PREFIX}/{DIGEST_KEY}")
        if recorded is None:
            return self._copies.fetch(body=body)  # handled by an older operator, or never
        current = self.build(body=body)
        return current if recorded == digest(current) else cast(kopf.BodyEssence, {DIGEST_FIELD: recorded})

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        if not _is_bridge(body):
            self._copies.store(body=body, patch=patch, essence=essence)
            return
        patch.metadata.annotations[f"{naming.ANNOTATION_PREFIX}/{DIGEST_KEY}"] = digest(essence)
        if f"{naming.ANNOTATION_PREFIX}/{COPY_KEY}" in body.metadata.annotations:
            patch.metadata.annotations[f"{naming.ANNOTATION_PREFIX}/{COPY_KEY}"] = None  # the old copy goes
        self._store_marker(prefix=self.prefix, patch=patch, body=body)


def _is_bridge(body: kopf.Body) -> bool:
    return body.get("kind") == "JmsBridge"
