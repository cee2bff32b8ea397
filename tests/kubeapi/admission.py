"""
What the API server does to a custom resource before it stores it, per its CRD's structural schema:
defaults filled in, unknown fields pruned (or refused, with `fieldValidation=Strict` as kubectl sends
it), then every CEL rule (`x-kubernetes-validations`) evaluated on the node it is attached to, with the
CEL implementation from PyPI (`common-expression-language`) the admission tests use.

CEL's cost budget and type checks are the API server's alone and are not run here; nor are the schema's
types and formats checked (the operator's models check those). Transition rules (those naming `oldSelf`:
`bridgeId` fixed at creation) run on an update only, on the nodes present in both.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Iterator, Mapping
from typing import Any

import cel

VALIDATIONS = "x-kubernetes-validations"
PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"
ALWAYS_KEPT = ("apiVersion", "kind", "metadata")  # the API server's, whatever the schema says

Path = tuple[Any, ...]


def defaulted(schema: Mapping[str, Any], value: Any) -> Any:
    """`value` with the schema's defaults filled in, as the API server stores it."""
    if isinstance(value, dict):
        result = dict(value)
        for name, prop in (schema.get("properties") or {}).items():
            if name not in result and "default" in prop:
                result[name] = copy.deepcopy(prop["default"])
            if name in result:
                result[name] = defaulted(prop, result[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            result = {
                k: v if k in (schema.get("properties") or {}) else defaulted(extra, v)
                for k, v in result.items()
            }
        return result
    if isinstance(value, list) and "items" in schema:
        return [defaulted(schema["items"], item) for item in value]
    return value


def pruned(schema: Mapping[str, Any], value: Any, path: Path = ()) -> tuple[Any, list[str]]:
    """`value` without the fields its schema does not declare, and the dotted paths of those."""
    if isinstance(value, dict):
        declared = schema.get("properties")
        extra = schema.get("additionalProperties")
        keep_unknown = schema.get(PRESERVE_UNKNOWN) or extra is True or (declared is None and extra is None)
        result, dropped = {}, []
        for key, item in value.items():
            if declared is not None and key in declared:
                result[key], lost = pruned(declared[key], item, (*path, key))
            elif isinstance(extra, Mapping):
                result[key], lost = pruned(extra, item, (*path, key))
            elif keep_unknown or (not path and key in ALWAYS_KEPT):
                result[key], lost = item, []
            else:
                lost = [".".join(map(str, (*path, key)))]
            dropped += lost
        return result, dropped
    if isinstance(value, list) and "items" in schema:
        items = [pruned(schema["items"], item, (*path, index)) for index, item in enumerate(value)]
        return [item for item, _ in items], [lost for _, found in items for lost in found]
    return value, []


def walk(
    schema: Mapping[str, Any], value: Any, path: Path = ()
) -> Iterator[tuple[Path, Any, Mapping[str, Any]]]:
    """Every node of `value` with its path and schema."""
    yield path, value, schema
    if isinstance(value, dict):
        for name, prop in (schema.get("properties") or {}).items():
            if name in value:
                yield from walk(prop, value[name], (*path, name))
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            for key, item in value.items():
                if key not in (schema.get("properties") or {}):
                    yield from walk(extra, item, (*path, key))
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            yield from walk(schema["items"], item, (*path, index))


def visible(schema: Mapping[str, Any], value: Any) -> Any:
    """What a CEL rule sees of `value`: the API server types an object by its declared properties (the
    unknown fields an object keeps are not visible), a map by its values."""
    if isinstance(value, dict):
        declared = schema.get("properties")
        if declared is not None:
            return {k: visible(declared[k], v) for k, v in value.items() if k in declared}
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return {k: visible(extra, v) for k, v in value.items()}
        return value
    if isinstance(value, list) and "items" in schema:
        return [visible(schema["items"], item) for item in value]
    return value


@dataclasses.dataclass(frozen=True)
class Rejection:
    path: Path  # the node the rule is attached to
    field: str | None  # the rule's fieldPath, as the API server names it
    message: str

    @property
    def where(self) -> str:
        """The field the API server names: the node's path, then the rule's `fieldPath`."""
        node = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path).lstrip(".")
        return f"{node}{self.field or ''}".lstrip(".") or "<root>"


ABSENT: Any = object()  # no such value (`None` is one)


def _at(value: Any, path: Path) -> Any:
    for part in path:
        found = isinstance(value, dict) and part in value
        found = found or (isinstance(value, list) and isinstance(part, int) and part < len(value))
        if not found:
            return ABSENT
        value = value[part]
    return value


def rejections(schema: Mapping[str, Any], obj: Any, path: Path = (), old: Any = ABSENT) -> list[Rejection]:
    """The CEL rules `obj` (stored as it is, defaults filled in) breaks; `path` says where it sits.

    On an update (`old`, at the same `path`), a node that did not change is not judged again: the API
    server's validation ratcheting (on by default since 1.30), which lets a stored object that a newer
    rule refuses still have its metadata and status written.
    """
    found = []
    for where, value, node in walk(schema, obj, path):
        rules = node.get(VALIDATIONS) or []
        if not rules or (old is not ABSENT and _at(old, where[len(path) :]) == value):
            continue
        seen = visible(node, value)
        for rule in rules:
            context = {"self": seen}
            if "oldSelf" in rule["rule"]:  # a transition rule: judged on an update, where the node was
                previous = ABSENT if old is ABSENT else _at(old, where[len(path) :])
                if previous is ABSENT:
                    continue  # a create, or a node new in this update: not a transition
                context["oldSelf"] = visible(node, previous)
            if _program(rule["rule"]).execute(context) is not True:
                found.append(Rejection(where, rule.get("fieldPath"), rule["message"]))
    return found


@functools.cache
def _program(rule: str) -> Any:
    """A rule compiled once: the CRDs' rules are few, their objects many."""
    return cel.compile(rule)
