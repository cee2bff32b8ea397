"""
The patch formats of the Kubernetes API, applied to plain JSON-like dicts.

- `application/merge-patch+json`: RFC 7386 (nested dicts merge, `null` deletes, anything else replaces).
- `application/strategic-merge-patch+json`: treated as a merge patch. The real server merges some lists
  by key (containers by name...); nothing we serve depends on that.
- `application/apply-patch+yaml` (server-side apply): treated as a merge patch too, without field
  ownership.
- `application/json-patch+json`: RFC 6902 through `jsonpatch`; a failed `test` op (kopf uses one on
  `/metadata/resourceVersion`) is a 422 for the caller, as on a real server.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
PATCH_TYPES = (MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH, JSON_PATCH)


class PatchError(ValueError):
    """A patch that cannot be applied (422 Unprocessable Entity on a real server)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386. Returns a new value; neither argument is modified."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: dict[str, Any], operations: Any) -> dict[str, Any]:
    """RFC 6902. Returns a new dict; the target is not modified."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    try:
        result = jsonpatch.apply_patch(target, operations, in_place=False)
    except jsonpatch.JsonPatchTestFailed as e:
        raise PatchError(f"the test operation failed: {e}") from e
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as e:
        raise PatchError(str(e)) from e
    if not isinstance(result, dict):
        raise PatchError("the patched document is not an object")
    return result


def apply_patch(target: dict[str, Any], patch_type: str, patch: Any) -> dict[str, Any]:
    if patch_type == JSON_PATCH:
        return json_patch(target, patch)
    if not isinstance(patch, dict):
        raise PatchError(f"a {patch_type} body must be an object")
    result: dict[str, Any] = merge_patch(target, patch)
    return result
