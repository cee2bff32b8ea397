"""Which version of each Secret a bridge's pods read, so that a rotated Secret rolls the bridge.

The job reads its credentials (environment variables from `secretKeyRef`) and its files (Secret volumes)
when its pods start: a changed Secret reaches it only through a restart. The reconciler asks here for
the version of every Secret the rendered pods name (`render.secret_names`) and renders their digest into
the driver's annotations (`render.ANNOTATION_SECRETS_VERSION`): a rotation is then a change of the spec,
rolled out standby first like any other.

- A version is the Secret's `uid` and `resourceVersion`, never its data: the digest on the
  SparkApplication, which more people read than the Secret, tells nothing about the values. A Secret
  created again under the same name counts as changed; an absent one has the version `absent`.
- Only `get`, each Secret by name, in the bridge's namespace (the chart's RBAC grants exactly that): no
  watch or list of the namespace's Secrets, and one read per Secret however many bridges use it. A
  version is read again once it is `max_age_seconds` old (`next_look`), so a rotation rolls the bridge
  within about that long; the bridge is reconciled only when a version changed.
- A read that fails (other than 404) keeps the version last read; one never read stays unknown, and the
  plan then keeps what each application carries (`planning.py`): an API hiccup restarts nothing.
- Versions do not depend on the operator's memory, so an operator restart reads the same ones and rolls
  nothing.
- The same read tells which bridges each Secret is marked for (`secret_marks.py`): a change of the mark is
  a new resourceVersion too.
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable, Iterable, Mapping

from bridge_job.contract.clients import SECRETS, Kube
from jmsbridge_operator.secret_marks import bridges_of

logger = logging.getLogger("jmsbridge_operator")

ABSENT = "absent"
DEFAULT_MAX_AGE_SECONDS = 60.0

Key = tuple[str, str]  # (namespace, Secret name)


def version_of(secret: Mapping[str, object] | None) -> str:
    """`uid/resourceVersion` of a Secret as the API server answered, `absent` for a 404."""
    if secret is None:
        return ABSENT
    metadata = secret.get("metadata")
    meta: Mapping[str, object] = metadata if isinstance(metadata, Mapping) else {}
    return f"{meta.get('uid') or ''}/{meta.get('resourceVersion') or ''}"


class SecretVersions:
    """The versions last read, with when; thread-safe (reconciliations run in kopf's worker threads)."""

    def __init__(
        self,
        kube: Kube,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
        clock: Callable[[], datetime.datetime] | None = None,
    ) -> None:
        self.kube = kube
        self.max_age = datetime.timedelta(seconds=max_age_seconds)
        self._clock = clock or (lambda: datetime.datetime.now(datetime.UTC))
        self._guard = threading.Lock()
        self._read: dict[Key, tuple[str, datetime.datetime]] = {}
        self._marks: dict[Key, frozenset[str]] = {}  # the bridges each Secret is marked for
        self._failing: dict[Key, datetime.datetime] = {}  # last failed read; said once per streak

    def known(self, namespace: str) -> dict[str, str]:
        """The versions of the namespace's Secrets read so far, stale or not."""
        with self._guard:
            return {name: read[0] for (space, name), read in self._read.items() if space == namespace}

    def marks(self, namespace: str) -> dict[str, frozenset[str]]:
        """The bridges each of the namespace's Secrets read so far is marked for."""
        with self._guard:
            return {name: marks for (space, name), marks in self._marks.items() if space == namespace}

    def stale(self, namespace: str, names: Iterable[str]) -> list[str]:
        """The names never read, or read longer than `max_age` ago."""
        now = self._clock()
        with self._guard:
            return [
                name
                for name in names
                if (read := self._read.get((namespace, name))) is None or now - read[1] >= self.max_age
            ]

    def refresh(self, namespace: str, names: Iterable[str]) -> bool:
        """Read each Secret again; a failed read keeps the version before it (and is logged once).
        Whether a version read differs from the one before (a first read counts as a change)."""
        changed = False
        for name in names:
            key = (namespace, name)
            try:
                secret = self.kube.get(SECRETS, namespace, name)
            except Exception as error:
                with self._guard:
                    first = key not in self._failing
                    self._failing[key] = self._clock()
                if first:
                    logger.warning(
                        "Cannot read Secret %s/%s to see whether it changed (%s); the bridges that read "
                        "it keep running on the version they started with",
                        namespace,
                        name,
                        error,
                    )
                continue
            version = version_of(secret)
            with self._guard:
                self._failing.pop(key, None)
                if secret is not None:  # an absent one is not unmarked: the pods would say it is missing
                    self._marks[key] = bridges_of(secret)
                else:
                    self._marks.pop(key, None)
                before = self._read.get(key)
                changed |= before is None or before[0] != version
                self._read[key] = (version, self._clock())
        return changed

    def next_look(self, namespace: str, names: Iterable[str]) -> datetime.datetime | None:
        """When the oldest of these versions is due to be read again (or a failed read tried again)."""
        keys = [(namespace, name) for name in names]
        with self._guard:
            moments = [read[1] for key in keys if (read := self._read.get(key))]
            moments += [since for key in keys if (since := self._failing.get(key))]
        return min(moments) + self.max_age if moments else None
