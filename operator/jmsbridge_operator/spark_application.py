"""SparkApplications through the spark-operator's own models (`kubeflow-spark-api`).

The Kubeflow spark-operator publishes pydantic models generated from its Go types, with the field names,
types and descriptions of its CRD. The package's version is the spark-operator release it is generated
from; pyproject.toml pins it to the release docs/operator.md names.

The models check types (strict: `"2"` is no integer) but, as the API server prunes a field its schema
does not know, they drop such a field without a word: a misspelled `serviceAcount` would vanish and the
application would run without it. So `checked` refuses every field the models did not keep, and checks
the enums the models take as any string (the CRD's `enum`s). Only what passes is rendered.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubeflow_spark_api.models import SparkV1beta2SparkApplication, SparkV1beta2SparkApplicationSpec

# The CRD's enums (v1beta2) where the models' fields are plain strings.
ENUMS: dict[tuple[str, ...], frozenset[str]] = {
    ("type",): frozenset({"Java", "Python", "Scala", "R"}),
    ("mode",): frozenset({"cluster", "client"}),
    ("pythonVersion",): frozenset({"2", "3"}),
    ("restartPolicy", "type"): frozenset({"Never", "Always", "OnFailure"}),
}


class InvalidApplication(ValueError):
    """A SparkApplication the spark-operator would not run as written."""


def _read(model: Any, obj: Mapping[str, Any]) -> dict[str, Any]:
    """`obj` as the models read it, as Kubernetes has it (by alias, unset fields left out).

    Through the package's own `from_dict`/`to_dict`: pydantic's `model_validate` alone takes no plain
    `"1Gi"` for its Quantity and IntOrString wrappers (`emptyDir.sizeLimit`, probes' ports).
    """
    read: dict[str, Any] = model.from_dict(dict(obj)).to_dict()
    return read


def dropped(given: Any, kept: Any, path: str = "") -> list[str]:
    """The paths of values in `given` that `kept` (the models' dump of it) lost."""
    if isinstance(given, Mapping) and isinstance(kept, Mapping):
        found: list[str] = []
        for key, value in given.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in kept:
                found += [] if value is None else [where]
            else:
                found += dropped(value, kept[key], where)
        return found
    if isinstance(given, list) and isinstance(kept, list):
        return [
            p
            for i, (g, k) in enumerate(zip(given, kept, strict=False))
            for p in dropped(g, k, f"{path}[{i}]")
        ]
    return []


def _enum_errors(spec: Mapping[str, Any]) -> list[str]:
    errors = []
    for path, allowed in ENUMS.items():
        value: Any = spec
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is not None and value not in allowed:
            errors.append(f"spec.{'.'.join(path)}: {value!r} is not one of {sorted(allowed)}")
    return errors


def checked(body: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `body` once the models read it as it is written, and its enums hold.

    Raises `InvalidApplication` naming the fields otherwise (a wrong type: pydantic's message). The copy
    keeps our order of the fields (the models' dump is in alphabetical order), with equal content.
    """
    try:
        read = _read(SparkV1beta2SparkApplication, body)
    except ValueError as error:  # pydantic's ValidationError, or no match of a Quantity's types
        raise InvalidApplication(f"not a SparkApplication: {error}") from error
    if unknown := dropped(body, read):
        raise InvalidApplication(f"fields the spark-operator does not know: {', '.join(unknown)}")
    if read != body:  # a null, or a value the models would change (1 == 1.0: a Quantity's float is equal)
        raise InvalidApplication(f"the models read it otherwise: {read}")
    if errors := _enum_errors(read["spec"]):
        raise InvalidApplication("; ".join(errors))
    return copy.deepcopy(dict(body))


def as_modelled(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """A spec as the models read it (what they do not know left out); as it is when they refuse it."""
    try:
        return _read(SparkV1beta2SparkApplicationSpec, spec)
    except ValueError:
        return spec
