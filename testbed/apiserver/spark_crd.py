"""The SparkApplication CRD where the spark-operator's own file is not beside the checkout, from its models.

`kubeflow-spark-api` (a dependency of the operator) holds the models of the spark-operator release we
pin, with its field names, types, required fields and descriptions; their JSON Schema becomes the CRD's
structural OpenAPI v3 schema here, so that a clone needs nothing beside it. Where the spark-operator's own
CRD file is beside the checkout (CI), the tests install that one instead (`installed_file`).

JSON Schema to a CRD schema: references are inlined (a CRD has no `$ref`), `Optional[...]` loses its
null, the Quantity and IntOrString wrappers become `x-kubernetes-int-or-string`, `metadata` is left to
the API server. What the models do not say, the CRD does not say either: enums are the operator's
own check (`jmsbridge_operator.spark_application`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from kubeflow_spark_api.models import SparkV1beta2SparkApplication

# The spark-operator's own CRD file, beside the checkout (shared/ref) in CI: what the tests install when
# it is there, so that the real API server validates our SparkApplications against the real schema.
REF_DIR = Path(__file__).resolve().parents[3] / "shared" / "ref"
UPSTREAM = REF_DIR / "sparkoperator.k8s.io_sparkapplications.yaml"
GROUP = "sparkoperator.k8s.io"
VERSION = "v1beta2"
NAMES = {
    "kind": "SparkApplication",
    "listKind": "SparkApplicationList",
    "plural": "sparkapplications",
    "singular": "sparkapplication",
    "shortNames": ["sparkapp"],
}
# The generator's oneOf wrappers: objects in the models, a number or a string in Kubernetes.
INT_OR_STRING = {"IoK8sApimachineryPkgApiResourceQuantity", "IoK8sApimachineryPkgUtilIntstrIntOrString"}
KEPT = ("type", "description", "required", "enum", "format")


def _structural(schema: dict[str, Any], defs: dict[str, Any], within: frozenset[str]) -> dict[str, Any]:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in INT_OR_STRING:
            return {"x-kubernetes-int-or-string": True}
        if name in within:  # recursive types (none in v1beta2 today): kept whole
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return _structural(defs[name], defs, within | {name})
    if "anyOf" in schema:
        options = [option for option in schema["anyOf"] if option != {"type": "null"}]
        if len(options) == 1:
            inner = _structural(options[0], defs, within)
            return {**inner, "description": schema["description"]} if "description" in schema else inner
        return {}  # a number or a string (a float field): any scalar, as the models take it
    result = {key: schema[key] for key in KEPT if key in schema}
    if "properties" in schema:
        result["properties"] = {k: _structural(v, defs, within) for k, v in schema["properties"].items()}
    if isinstance(schema.get("items"), dict):
        result["items"] = _structural(schema["items"], defs, within)
    if isinstance(schema.get("additionalProperties"), dict):
        result["additionalProperties"] = _structural(schema["additionalProperties"], defs, within)
    return result


def crd() -> dict[str, Any]:
    """The CustomResourceDefinition of SparkApplication, from the models."""
    schema = SparkV1beta2SparkApplication.model_json_schema(by_alias=True)
    openapi = _structural(schema, schema.get("$defs", {}), frozenset())
    openapi["properties"]["metadata"] = {"type": "object"}  # the API server's, not the CRD's
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        # A CRD of a `*.k8s.io` group needs this annotation (the spark-operator's own names its approval).
        "metadata": {
            "name": f"{NAMES['plural']}.{GROUP}",
            "annotations": {
                "api-approved.kubernetes.io": "unapproved, the tests' copy of the spark-operator's"
            },
        },
        "spec": {
            "group": GROUP,
            "names": NAMES,
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": openapi},
                }
            ],
        },
    }


@functools.cache
def spark_crd_file() -> Path:
    """The CRD as a file (what `KubeApi.install_crds` takes), named by its content in the temporary
    directory: one file per version of the models, shared by every process, whose end need not remove
    it (pytest-xdist's workers end without running `atexit`, and left one directory each per run)."""
    text = json.dumps(crd())
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"jmsbridge-spark-crd-{digest}.json"
    if not path.exists():
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".partial", delete=False) as partial:
            partial.write(text)
        os.replace(partial.name, path)  # whole, whoever writes it at the same time
    return path


def installed_file() -> Path:
    """The CRD the tests install: the spark-operator's own where it is beside the checkout, else ours."""
    return UPSTREAM if UPSTREAM.exists() else spark_crd_file()
