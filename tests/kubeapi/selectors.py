"""
Label and field selectors, as the Kubernetes API server understands them in `?labelSelector=`
and `?fieldSelector=`.

Label selectors support the full grammar: equality (`a=b`, `a==b`, `a!=b`), sets (`a in (x,y)`,
`a notin (x)`), existence (`a`, `!a`) and the integer comparisons `a>1`, `a<1`. Field selectors
support `path=value`, `path==value` and `path!=value` on any dotted path (the real server allows
only a few paths per kind; being lenient here costs nothing and keeps the emulator small).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any

Selector = Callable[[Mapping[str, Any]], bool]

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_SET_RE = re.compile(rf"^({_KEY})\s+(in|notin)\s*\((.*)\)$")
_EQUALITY_RE = re.compile(rf"^({_KEY})\s*(==|=|!=)\s*(.*)$")
_COMPARISON_RE = re.compile(rf"^({_KEY})\s*([<>])\s*(-?\d+)$")
_EXISTS_RE = re.compile(rf"^({_KEY})$")
_NOT_EXISTS_RE = re.compile(rf"^!\s*({_KEY})$")


class SelectorError(ValueError):
    """A selector that the API server would reject with 400 Bad Request."""


@dataclasses.dataclass(frozen=True)
class _Requirement:
    key: str
    operator: str  # in, notin, exists, !exists, gt, lt
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        match self.operator:
            case "in":
                return present and value in self.values
            case "notin":
                return not present or value not in self.values
            case "exists":
                return present
            case "!exists":
                return not present
            case "gt" | "lt":
                try:
                    actual = int(value or "")
                except ValueError:
                    return False
                (limit,) = (int(v) for v in self.values)
                return actual > limit if self.operator == "gt" else actual < limit
        raise AssertionError(f"unknown operator {self.operator}")


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses: `a in (x,y),b` -> [`a in (x,y)`, `b`]."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part.strip() for part in parts if part.strip()]


def _parse_requirement(text: str) -> _Requirement:
    if match := _SET_RE.match(text):
        key, operator, values = match.groups()
        return _Requirement(key, operator, frozenset(v.strip() for v in values.split(",")))
    if match := _COMPARISON_RE.match(text):
        key, operator, value = match.groups()
        return _Requirement(key, "gt" if operator == ">" else "lt", frozenset([value]))
    if match := _EQUALITY_RE.match(text):
        key, operator, value = match.groups()
        return _Requirement(key, "notin" if operator == "!=" else "in", frozenset([value.strip()]))
    if match := _NOT_EXISTS_RE.match(text):
        return _Requirement(match.group(1), "!exists")
    if match := _EXISTS_RE.match(text):
        return _Requirement(match.group(1), "exists")
    raise SelectorError(f"unable to parse requirement: {text!r}")


def parse_label_selector(text: str | None) -> Selector:
    """Parse `?labelSelector=` into a predicate over whole objects."""
    requirements = [_parse_requirement(part) for part in _split_top_level(text or "")]

    def matches(obj: Mapping[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(requirement.matches(labels) for requirement in requirements)

    return matches


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_field_selector(text: str | None) -> Selector:
    """Parse `?fieldSelector=` into a predicate over whole objects."""
    checks: list[tuple[str, bool, str]] = []
    for part in _split_top_level(text or ""):
        match = re.match(r"^([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*)$", part)
        if match is None:
            raise SelectorError(f"invalid field selector: {part!r}")
        path, operator, value = match.groups()
        checks.append((path, operator != "!=", value.strip()))

    def matches(obj: Mapping[str, Any]) -> bool:
        return all((_field_value(obj, path) == value) == equal for path, equal, value in checks)

    return matches
