"""Drift: what of a child object differs from what the operator rendered for it.

A SparkApplication edited by hand (`image: evil/image:1`, `executor.instances: 7`) or a ConfigMap edited or
deleted is put back by the next reconciliation, which the edit itself triggers (the operator watches both
kinds, `handlers/`). The spec-hash annotation alone cannot tell: a hand edit leaves it as it was.

- SparkApplication: after each write the operator records the hash of the spec as the API server stored
  it (`naming.ANNOTATION_STORED_SPEC_HASH`, defaults the API server filled in included). A spec whose
  hash differs from it was changed by someone else, whatever field they changed or added. An application
  without the record (written by an older operator) is compared field by field, our fields only, so
  that a default filled in by the API server is not mistaken for an edit. Fields are compared as the
  spark-operator's models read them (`spark_application.as_modelled`), as they were rendered.
- ConfigMap: its `data` is compared with the rendered data (the API server adds nothing there).

Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jmsbridge_operator import naming
from jmsbridge_operator.render import digest
from jmsbridge_operator.spark_application import as_modelled

MAX_LISTED = 5


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def differences(desired: Any, live: Any, path: str = "") -> list[str]:
    """The paths where `live` lacks or changes a value of `desired` (values `desired` lacks are ignored)."""
    if isinstance(desired, Mapping) and isinstance(live, Mapping):
        found = []
        for key, value in desired.items():
            found += differences(value, live.get(key), f"{path}.{key}" if path else str(key))
        return found
    if isinstance(desired, list) and isinstance(live, list) and len(desired) == len(live):
        return [
            p
            for i, (d, v) in enumerate(zip(desired, live, strict=True))
            for p in differences(d, v, f"{path}[{i}]")
        ]
    return [] if desired == live else [path or "(all)"]


def added(desired: Any, live: Any, path: str = "") -> list[str]:
    """The paths of values `live` has and `desired` does not."""
    if isinstance(desired, Mapping) and isinstance(live, Mapping):
        found = []
        for key, value in live.items():
            where = f"{path}.{key}" if path else str(key)
            found += [where] if key not in desired else added(desired[key], value, where)
        return found
    return []


def application_drift(live: Mapping[str, Any], desired: Mapping[str, Any]) -> list[str]:
    """The spec fields (as `spec.x.y`) someone else changed in a SparkApplication; empty when none."""
    live_spec, desired_spec = live.get("spec") or {}, desired.get("spec") or {}
    modelled = as_modelled(live_spec)
    changed = differences(desired_spec, modelled, "spec")  # desired: rendered, so as the models read it
    recorded = _annotations(live).get(naming.ANNOTATION_STORED_SPEC_HASH)
    if recorded is None:
        return changed
    if digest(live_spec) == recorded:
        return []  # as stored after our write: a difference is the API server's (a default, a pruned field)
    # A changed field the models do not know shows in the hash only: then the spec as a whole.
    return changed + added(desired_spec, modelled, "spec") or ["spec"]


def config_map_drift(live: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    return bool(live.get("data") != desired.get("data"))


def missing_labels(live: Mapping[str, Any], desired: Mapping[str, Any]) -> list[str]:
    """Our labels that `live` lacks or changed (others' labels are left alone)."""
    have = (live.get("metadata") or {}).get("labels") or {}
    want = (desired.get("metadata") or {}).get("labels") or {}
    return [key for key, value in want.items() if have.get(key) != value]


def listed(paths: list[str]) -> str:
    """Paths for a message, a few at most."""
    more = len(paths) - MAX_LISTED
    return ", ".join(paths[:MAX_LISTED]) + (f" and {more} more" if more > 0 else "")


def stored_spec_hash(obj: Mapping[str, Any]) -> str:
    """What to record on an object the API server just returned from our write."""
    return digest(obj.get("spec") or {})
