"""
OpenAPI v3 (`/openapi/v3` and one document per group-version), as kubectl reads it.

- `kubectl apply` asks it whether the server validates fields itself (the `fieldValidation` parameter of
  a kind's PATCH operation): it does here (admission.py), so kubectl sends `fieldValidation=Strict` and
  validates nothing on its own side, which would need OpenAPI v2.
- `kubectl explain` reads a kind's schema: a custom resource's is its CRD's `openAPIV3Schema`; a built-in
  kind gets a schema without fields (the emulator does not know them).

A custom resource's PATCH takes the patch types of a custom resource (no strategic merge), so kubectl
computes a JSON merge patch for it, as against a real server.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from tests.kubeapi.resources import ResourceType

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_META_SCHEMA = {
    "description": "Standard object's metadata.",
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Name must be unique within a namespace."},
        "namespace": {"type": "string", "description": "The namespace the object is in."},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}
_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")
_FIELD_VALIDATION = {
    "name": "fieldValidation",
    "in": "query",
    "description": "How the server treats unknown or duplicate fields: Ignore, Warn or Strict.",
    "schema": {"type": "string", "uniqueItems": True},
}


def group_version_path(group: str, version: str) -> str:
    """The index's key of a group-version: `api/v1`, `apis/jmsbridge.dev/v1alpha1`."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def schema_name(rtype: ResourceType) -> str:
    """`dev.jmsbridge.v1alpha1.JmsBridge`, `io.k8s.api.core.v1.ConfigMap`: the API server's naming."""
    prefix = ".".join(reversed(rtype.group.split("."))) if rtype.group else "io.k8s.api.core"
    return f"{prefix}.{rtype.version}.{rtype.kind}"


def _gvk(rtype: ResourceType) -> dict[str, str]:
    return {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}


def _kind_schema(rtype: ResourceType) -> dict[str, Any]:
    schema = dict(rtype.schema or {"type": "object", "description": f"{rtype.kind} (fields not described)"})
    schema["properties"] = {
        **(schema.get("properties") or {}),
        "apiVersion": {"type": "string", "description": "The versioned schema of this representation."},
        "kind": {"type": "string", "description": "The REST resource this object represents."},
        "metadata": {"allOf": [{"$ref": f"#/components/schemas/{OBJECT_META}"}], "default": {}},
    }
    schema["x-kubernetes-group-version-kind"] = [_gvk(rtype)]
    return schema


def _paths(rtype: ResourceType) -> dict[str, Any]:
    base = f"/{group_version_path(rtype.group, rtype.version)}"
    collection = (
        f"{base}/namespaces/{{namespace}}/{rtype.plural}" if rtype.namespaced else f"{base}/{rtype.plural}"
    )
    ref = {"$ref": f"#/components/schemas/{schema_name(rtype)}"}
    answer = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
    extension = {"x-kubernetes-group-version-kind": _gvk(rtype)}
    body = {"content": {"application/json": {"schema": ref}}}
    patch_body = {"content": {media: {"schema": {"type": "object"}} for media in _PATCH_TYPES}}
    validating = [_FIELD_VALIDATION]
    return {
        collection: {
            "get": {"responses": answer, **extension},
            "post": {"requestBody": body, "parameters": validating, "responses": answer, **extension},
        },
        f"{collection}/{{name}}": {
            "get": {"responses": answer, **extension},
            "put": {"requestBody": body, "parameters": validating, "responses": answer, **extension},
            "patch": {"requestBody": patch_body, "parameters": validating, "responses": answer, **extension},
            "delete": {"responses": answer, **extension},
        },
    }


def document(types: Iterable[ResourceType]) -> dict[str, Any]:
    """The OpenAPI v3 document of one group-version's kinds."""
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {OBJECT_META: _META_SCHEMA}
    for rtype in types:
        paths.update(_paths(rtype))
        schemas[schema_name(rtype)] = _kind_schema(rtype)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def digest(doc: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16].upper()


def index(documents: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """`/openapi/v3`: where each group-version's document is (its hash lets kubectl cache it)."""
    return {
        "paths": {
            path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest(doc)}"}
            for path, doc in sorted(documents.items())
        }
    }
