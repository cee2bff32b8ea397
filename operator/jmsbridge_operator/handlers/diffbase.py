"""What kopf remembers of a bridge it handled: a digest of it, in the operator's memory.

kopf compares an object with the last state it handled to tell a change (an update handler) from a
repeated event. By default it keeps that state as a copy of the whole spec in an annotation
(`last-handled-configuration`): a credential in a bridge's spec (waived by
`spec.security.allowInlineCredentials`) would then be copied into metadata, readable wherever the
object is, and every handled change would cost a patch of the bridge. Our bridge handlers reconcile from
a look at the cluster and never read kopf's `old` or `diff`, so a digest kept in memory is enough: when
it matches, the bridge is what was handled (no diff); when it does not, kopf sees a change and runs the
update handler. A restarted operator remembers nothing: kopf handles each bridge as created, which
reconciles it as a resumption would, and writes nothing when nothing changed.

Routes get no diff-base at all: the operator follows them with `on.event` (handlers/routes.py); a route
handled by an older operator keeps its copy. A bridge handled by an older operator loses its copy, or
the digest an operator before this one kept in an annotation, at its next handling.
"""

from __future__ import annotations

import threading
from typing import Any, cast

import kopf

from jmsbridge_operator import naming
from jmsbridge_operator.render import digest

COPY_KEY = "last-handled-configuration"
DIGEST_KEY = "last-handled-digest"  # where operators before this one kept the digest
DIGEST_FIELD = "digest"


class BridgeDigestStorage(kopf.AnnotationsDiffBaseStorage):
    def __init__(self) -> None:
        super().__init__(prefix=naming.ANNOTATION_PREFIX, key=COPY_KEY)
        self._copies = kopf.AnnotationsDiffBaseStorage(prefix=naming.ANNOTATION_PREFIX, key=COPY_KEY)
        self._digests: dict[str, str] = {}  # per bridge uid: the digest of what was handled
        self._lock = threading.Lock()

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> kopf.BodyEssence:
        essence = super().build(body=body, extra_fields=extra_fields)
        annotations = (essence.get("metadata") or {}).get("annotations") or {}
        annotations.pop(_annotation(DIGEST_KEY), None)  # an older operator's record is no change
        self.remove_empty_stanzas(essence)
        return essence

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        if not _is_bridge(body):
            return self._copies.fetch(body=body)
        with self._lock:
            recorded = self._digests.get(str(body.metadata.uid))
        if recorded is None:
            return None  # not handled since the operator started: kopf handles it as created
        current = self.build(body=body)
        return current if recorded == digest(current) else cast(kopf.BodyEssence, {DIGEST_FIELD: recorded})

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        if not _is_bridge(body):
            self._copies.store(body=body, patch=patch, essence=essence)
            return
        with self._lock:
            self._digests[str(body.metadata.uid)] = digest(essence)
        for key in (COPY_KEY, DIGEST_KEY):  # an older operator's record goes (a copy may hold a credential)
            if _annotation(key) in body.metadata.annotations:
                patch.metadata.annotations[_annotation(key)] = None

    def forget(self, body: kopf.Body) -> None:
        """The bridge is gone."""
        with self._lock:
            self._digests.pop(str(body.metadata.uid), None)


class UnmarkedProgressStorage(kopf.AnnotationsProgressStorage):
    """kopf's progress of a handler under our prefix, written only while a handler is retried.

    kopf also brands an object it records progress on with `<prefix>/kopf-managed` (for other kopf
    operators to tell our annotations apart): a patch of every bridge once, for nobody we know of."""

    def _store_marker(self, prefix: str, patch: kopf.Patch, body: kopf.Body) -> None:
        pass


def _annotation(key: str) -> str:
    return f"{naming.ANNOTATION_PREFIX}/{key}"


def _is_bridge(body: kopf.Body) -> bool:
    return body.get("kind") == "JmsBridge"
