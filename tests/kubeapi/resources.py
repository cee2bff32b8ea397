"""
The resource kinds the emulator serves: a few built-ins plus whatever CRDs are POSTed.

Each kind is a `ResourceType`; the catalog mirrors every registration into kmock's `ResourcesArray`,
from which kmock's discovery endpoints (`/api/v1`, `/apis/{group}/{version}`) are rendered.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterator, Mapping
from typing import Any

import kmock

VERBS = frozenset({"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"})


@dataclasses.dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    shortnames: frozenset[str] = frozenset()
    categories: frozenset[str] = frozenset()
    subresources: frozenset[str] = frozenset()
    crd: str | None = None  # the name of the CustomResourceDefinition that declared it
    # From the CRD: what `kubectl get` shows (tables.py), and the schema objects are admitted by
    # (admission.py) and `kubectl explain` reads (openapi.py).
    printer_columns: tuple[Mapping[str, Any], ...] = dataclasses.field(default=(), compare=False)
    schema: Mapping[str, Any] | None = dataclasses.field(default=None, compare=False)

    @functools.cached_property  # asked for on every request; kmock makes it slowly
    def key(self) -> kmock.resource:
        return kmock.resource(self.group, self.version, self.plural)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def qualified_plural(self) -> str:
        """`configmaps`, `leases.coordination.k8s.io`: as the real server names kinds in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _builtin(api_version: str, plural: str, kind: str, namespaced: bool, **extra: Any) -> ResourceType:
    group, _, version = api_version.rpartition("/")
    return ResourceType(
        group=group, version=version, plural=plural, kind=kind, namespaced=namespaced,
        singular=kind.lower(), **extra,
    )  # fmt: skip


BUILTINS = (
    _builtin("v1", "namespaces", "Namespace", False, shortnames=frozenset({"ns"}),
             subresources=frozenset({"status", "finalize"})),
    _builtin("v1", "configmaps", "ConfigMap", True, shortnames=frozenset({"cm"})),
    _builtin("v1", "secrets", "Secret", True),
    _builtin("v1", "events", "Event", True, shortnames=frozenset({"ev"})),
    _builtin("v1", "serviceaccounts", "ServiceAccount", True, shortnames=frozenset({"sa"})),
    _builtin("v1", "pods", "Pod", True, shortnames=frozenset({"po"}), categories=frozenset({"all"}),
             subresources=frozenset({"status"})),
    _builtin("events.k8s.io/v1", "events", "Event", True, shortnames=frozenset({"ev"})),
    _builtin("coordination.k8s.io/v1", "leases", "Lease", True),
    _builtin("v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, shortnames=frozenset({"pvc"}),
             subresources=frozenset({"status"})),
    _builtin("apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition", False,
             shortnames=frozenset({"crd", "crds"}), categories=frozenset({"api-extensions"}),
             subresources=frozenset({"status"})),
)  # fmt: skip

CRDS = kmock.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
NAMESPACES = kmock.resource("", "v1", "namespaces")


def version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes' version order: v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > anything unconventional."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if match is None:
        return (0, 0, 0)
    major, stage, minor = match.groups()
    return ({None: 3, "beta": 2, "alpha": 1}[stage], int(major), int(minor or 0))


def types_from_crd(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The served versions of a CustomResourceDefinition, as resource types."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    result = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        kind = names["kind"]
        result.append(
            ResourceType(
                group=spec["group"],
                version=version["name"],
                plural=names["plural"],
                kind=kind,
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                singular=names.get("singular") or kind.lower(),
                shortnames=frozenset(names.get("shortNames") or ()),
                categories=frozenset(names.get("categories") or ()),
                subresources=frozenset(name for name in ("status", "scale") if name in subresources),
                crd=crd["metadata"]["name"],
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
                schema=(version.get("schema") or {}).get("openAPIV3Schema"),
            )
        )
    return result


class ResourceCatalog:
    """Which kinds exist, keyed by kmock's resource (group, version, plural)."""

    def __init__(self, discovery: kmock.ResourcesArray) -> None:
        self._discovery = discovery
        self._types: dict[kmock.resource, ResourceType] = {}
        for builtin in BUILTINS:
            self.register(builtin)

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._types.values()))

    def get(self, key: kmock.resource) -> ResourceType | None:
        return self._types.get(kmock.resource(key.group, key.version, key.plural))

    def register(self, rtype: ResourceType) -> None:
        self._types[rtype.key] = rtype
        self._discovery[rtype.key] = kmock.ResourceInfo(
            kind=rtype.kind,
            singular=rtype.singular,
            namespaced=rtype.namespaced,
            verbs=VERBS,
            shortnames=rtype.shortnames,
            categories=rtype.categories,
            subresources=rtype.subresources,
        )

    def unregister(self, rtype: ResourceType) -> None:
        self._types.pop(rtype.key, None)
        if rtype.key in self._discovery:
            del self._discovery[rtype.key]

    def declared_by(self, crd_name: str) -> list[ResourceType]:
        return [rtype for rtype in self if rtype.crd == crd_name]

    def versions(self, group: str) -> list[str]:
        """The served versions of a group, the preferred one first."""
        versions = {rtype.version for rtype in self if rtype.group == group}
        return sorted(versions, key=version_priority, reverse=True)
