"""Shared helpers of the operator tests: example resources, CRD schemas as strict JSON Schemas."""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from testbed.apiserver.client import yaml_documents
from testbed.apiserver.spark_crd import UPSTREAM
from testbed.resources import CHECKPOINT_CLAIM, GROUP_VERSION, NAMESPACE

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "crds"
CHART_DIR = REPO / "charts" / "jms-bridge-operator"
EXAMPLES = REPO / "examples" / "cluster"
REF_DIR = REPO.parent / "shared" / "ref"  # upstream files beside the checkout, for cross-checks only
SPARK_CRD = UPSTREAM

SPARK_VERSION = "sparkoperator.k8s.io/v1beta2"


def require_reference(path: Path = SPARK_CRD) -> Path:
    """The upstream file for a cross-check; missing, it fails the test in CI (CI=true) and skips it
    elsewhere (a clone with nothing beside it: the suite runs on the models' CRD, `spark_crd_file`)."""
    if path.exists():
        return path
    message = f"upstream cross-check: {path} is not beside the checkout (only in CI)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def load_yaml(path: Path) -> list[dict[str, Any]]:
    return yaml_documents(path.read_text(encoding="utf-8"))


def example(file: str, kind: str, name: str | None = None) -> dict[str, Any]:
    for document in load_yaml(EXAMPLES / file):
        if document["kind"] == kind and (name is None or document["metadata"]["name"] == name):
            return copy.deepcopy(document)
    raise LookupError(f"no {kind} {name} in {file}")


def bridge(name: str = "orders", **spec_changes: Any) -> dict[str, Any]:
    """The example bridge, renamed, with top-level spec fields replaced."""
    body = example("bridge.yaml", "JmsBridge")
    body["metadata"]["name"] = name
    body["spec"].update(spec_changes)
    return body


def claim(name: str = CHECKPOINT_CLAIM, *modes: str) -> dict[str, Any]:
    """A PersistentVolumeClaim, ReadWriteMany unless `modes` say otherwise."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "accessModes": list(modes or ["ReadWriteMany"]),
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def default_id(name: str, namespace: str = NAMESPACE) -> str:
    """The id of a bridge without spec.bridgeId: `<namespace>-<name>` (bridge_job/config/names.py)."""
    return f"{namespace}-{name}"


def route(
    name: str, bridge_name: str = "simple", order: int = 10, topic: str = "out", **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "JmsBridgeRoute",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"bridgeRef": {"name": bridge_name}, "order": order, "kafkaTopic": topic, **spec},
    }


# ---------------------------------------------------------------------------------------------------
# Schemas


def strict(schema: Any) -> Any:
    """An OpenAPI v3 CRD schema as JSON Schema that also rejects fields the API server would prune.

    The API server silently drops unknown fields of a structural schema; a typo in what we render would
    vanish without an error. So every object with `properties` and no `additionalProperties` or
    `x-kubernetes-preserve-unknown-fields` gets `additionalProperties: false` here. A value marked
    `x-kubernetes-int-or-string` gets the types the API server checks it for.
    """
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    result = {key: strict(value) for key, value in schema.items()}
    if (
        "properties" in result
        and "additionalProperties" not in result
        and not result.get("x-kubernetes-preserve-unknown-fields")
    ):
        result["additionalProperties"] = False
    if result.get("x-kubernetes-int-or-string") and "type" not in result:
        result["type"] = ["integer", "string"]
    return result


def crd_schema(crd: Mapping[str, Any], version: str | None = None) -> dict[str, Any]:
    for entry in crd["spec"]["versions"]:
        if version is None or entry["name"] == version:
            schema: dict[str, Any] = entry["schema"]["openAPIV3Schema"]
            return schema
    raise LookupError(version)


@functools.lru_cache(maxsize=4)
def _validator(path: str, version: str | None) -> jsonschema.protocols.Validator:
    crd = next(d for d in load_yaml(Path(path)) if d.get("kind") == "CustomResourceDefinition")
    schema = strict(crd_schema(crd, version))
    # Top-level metadata is validated by the API server itself, not by the CRD schema.
    schema["properties"]["metadata"] = {"type": "object"}
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def schema_errors(path: Path, obj: Mapping[str, Any], version: str | None = None) -> list[str]:
    validator = _validator(str(path), version)
    return [
        f"{'.'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
        for error in validator.iter_errors(dict(obj))
    ]
