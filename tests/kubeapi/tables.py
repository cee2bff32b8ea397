"""
Table output (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`), which `kubectl get` asks for.

A custom resource's columns are its CRD's `additionalPrinterColumns` (JSONPath, as the API server's CRD
table convertor evaluates them: the first result, a `date` as an age, nothing found as an empty cell);
a kind without them has NAME and AGE, as the API server's default table does.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tests.kubeapi.resources import ResourceType

TABLE_MEDIA = "as=Table"
NAME_COLUMN = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name must be unique within a namespace.",
    "priority": 0,
}
AGE_COLUMN = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}

_STEP = re.compile(r"""\.([^.\[]+)|\[(\d+|\*)\]|\[\?\(@\.([\w.]+)\s*==\s*["']([^"']*)["']\)\]""")


def wants_table(accept: str) -> bool:
    return any(TABLE_MEDIA in part.replace(" ", "") for part in accept.split(","))


def json_path(obj: Any, path: str) -> list[Any]:
    """What a printer column's JSONPath finds in `obj` (fields, `[n]`, `[*]`, `[?(@.a.b=="v")]`)."""
    found = [obj]
    position = 0
    text = path.strip().removeprefix("{").removesuffix("}").removeprefix("$")
    while position < len(text):
        step = _STEP.match(text, position)
        if step is None:
            raise ValueError(f"unsupported JSONPath {path!r} at {text[position:]!r}")
        position = step.end()
        found = list(_apply(found, *step.groups()))
    return found


def _apply(
    values: list[Any], field: str | None, index: str | None, key: str | None, value: str | None
) -> Iterator[Any]:
    for current in values:
        if field is not None and isinstance(current, Mapping) and field in current:
            yield current[field]
        elif index is not None and isinstance(current, list):
            if index == "*":
                yield from current
            elif int(index) < len(current):
                yield current[int(index)]
        elif key is not None and isinstance(current, list):
            yield from (item for item in current if _field(item, key) == value)


def _field(item: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        item = item.get(part) if isinstance(item, Mapping) else None
    return None if item is None else str(item)


def age(timestamp: Any, now: datetime.datetime | None = None) -> str | None:
    """`kubectl get`'s age: 45s, 12m, 5h, 3d (the API server's `ConvertToHumanReadableDateType`)."""
    try:
        then = datetime.datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    seconds = max(int(((now or datetime.datetime.now(datetime.UTC)) - then).total_seconds()), 0)
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 2 * 3600:
        return f"{seconds // 60}m"
    if seconds < 2 * 86400:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def _cell(obj: Mapping[str, Any], column: Mapping[str, Any]) -> Any:
    results = json_path(obj, str(column["jsonPath"]))
    if not results or results[0] is None:
        return None
    value = results[0]
    if column.get("type") == "date":
        return age(value)
    if column.get("type") in ("integer", "number", "boolean") or isinstance(value, str):
        return value
    return str(value)


def columns_of(rtype: ResourceType) -> list[Mapping[str, Any]]:
    return list(rtype.printer_columns) if rtype.printer_columns else [AGE_COLUMN]


def table(rtype: ResourceType, objects: Sequence[Mapping[str, Any]], resource_version: str) -> dict[str, Any]:
    columns = columns_of(rtype)
    definitions = [NAME_COLUMN] + [
        {
            "name": column["name"],
            "type": column.get("type", "string"),
            "format": column.get("format", ""),
            "description": column.get("description", ""),
            "priority": column.get("priority", 0),
        }
        for column in columns
    ]
    rows = [
        {
            "cells": [obj["metadata"]["name"], *(_cell(obj, column) for column in columns)],
            "object": {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"],
            },
        }
        for obj in objects
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": definitions,
        "rows": rows,
    }
