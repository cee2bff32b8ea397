"""The CRDs are generated from the models, structural, and committed as generated."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from jmsbridge_operator import crdgen

from testbed.resources import simple_bridge
from tests.operator.helpers import (
    CHART_DIR,
    CRD_DIR,
    EXAMPLES,
    REPO,
    crd_schema,
    load_yaml,
    route,
    schema_errors,
)

BRIDGE_CRD = CRD_DIR / "jmsbridge.dev_jmsbridges.yaml"
ROUTE_CRD = CRD_DIR / "jmsbridge.dev_jmsbridgeroutes.yaml"


def test_committed_crds_match_the_models() -> None:
    stale = crdgen.drift(REPO)
    assert not stale, f"regenerate with `python -m jmsbridge_operator.crdgen`: {stale}"


def test_chart_carries_the_same_crds() -> None:
    for path in CRD_DIR.glob("*.yaml"):
        assert (CHART_DIR / "crds" / path.name).read_text() == path.read_text()


def _nodes(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, prop in (schema.get("properties") or {}).items():
        yield from _nodes(prop, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}{{}}")


@pytest.mark.parametrize("crd", list(crdgen.crds().values()), ids=list(crdgen.crds()))
def test_every_field_has_a_description(crd: dict[str, Any]) -> None:
    """What `kubectl explain jmsbridge.spec...` shows: every field of spec and status, and apiVersion and
    kind, says what it is (a field's docstring in the models, `use_attribute_docstrings`). `metadata` is the
    API server's ObjectMeta, which it describes itself: a CRD may say nothing of it but its type."""
    schema = crd_schema(crd)
    assert schema["properties"]["metadata"] == {"type": "object"}
    fields = [
        (path, node)
        for path, node in _nodes(schema)
        # list items and map values are no fields of their own
        if path and path != ".metadata" and not path.endswith(("[]", "{}"))
    ]
    bare = [path for path, node in fields if not str(node.get("description") or "").strip()]
    described = 100 * (len(fields) - len(bare)) / len(fields)
    assert bare == [], f"{described:.0f}% of {len(fields)} fields have a description; not: {bare}"
    assert len(fields) > 40  # the walk reached the nested fields


@pytest.mark.parametrize("crd", list(crdgen.crds().values()), ids=list(crdgen.crds()))
def test_schemas_are_structural(crd: dict[str, Any]) -> None:
    """The rules the API server enforces for apiextensions.k8s.io/v1 (what it would refuse to store)."""
    problems = []
    for path, node in _nodes(crd_schema(crd)):
        keys = set(node)
        if keys & {"$ref", "$defs", "definitions", "patternProperties", "propertyNames", "dependencies"}:
            problems.append(f"{path}: unsupported keyword {sorted(keys & {'$ref', 'patternProperties'})}")
        if "type" not in node and not (
            node.get("x-kubernetes-preserve-unknown-fields") or node.get("x-kubernetes-int-or-string")
        ):
            problems.append(f"{path}: no type")
        if "properties" in node and "additionalProperties" in node:
            problems.append(f"{path}: properties and additionalProperties together")
        if node.get("additionalProperties") is False:
            problems.append(f"{path}: additionalProperties: false")
        for combinator in ("anyOf", "oneOf", "allOf", "not"):
            if combinator in node:
                problems.append(f"{path}: {combinator} (pydantic's optional/union leaked through)")
        if node.get("nullable"):
            problems.append(f"{path}: nullable")
        if "default" in node:
            if node["default"] is None:
                problems.append(f"{path}: null default")
            else:
                errors = list(jsonschema.Draft202012Validator(node).iter_errors(node["default"]))
                problems += [f"{path}: default invalid: {e.message}" for e in errors]
        if node.get("x-kubernetes-list-type") == "map":
            required = set(node["items"].get("required") or [])
            keys = node["x-kubernetes-list-map-keys"]
            problems += [f"{path}: list-map key {k} not required" for k in keys if k not in required]
    assert not problems


def test_names_columns_and_subresources() -> None:
    bridge, route_crd = crdgen.bridge_crd(), crdgen.route_crd()
    for crd, kind in ((bridge, "JmsBridge"), (route_crd, "JmsBridgeRoute")):
        assert crd["spec"]["names"]["kind"] == kind
        assert crd["spec"]["names"]["categories"] == ["jms-bridge"]
        assert crd["spec"]["scope"] == "Namespaced"
        version = crd["spec"]["versions"][0]
        assert version["name"] == "v1alpha1" and version["subresources"] == {"status": {}}
        assert crd_schema(crd)["required"] == ["spec"]
    assert bridge["spec"]["names"]["shortNames"] == ["jb"]
    columns = [
        c["name"] for c in bridge["spec"]["versions"][0]["additionalPrinterColumns"] if not c.get("priority")
    ]
    assert columns == ["Ready", "Status", "Active", "Routes", "Age"]


def test_examples_validate() -> None:
    """Every example directory's resources (examples/ itself, cluster/, nats/, ...)."""
    paths = sorted(EXAMPLES.parent.glob("**/*.yaml"))
    assert EXAMPLES.parent / "nats" / "bridge.yaml" in paths
    for path in paths:
        for document in load_yaml(path):
            if document["kind"] in ("JmsBridge", "JmsBridgeRoute"):
                crd = BRIDGE_CRD if document["kind"] == "JmsBridge" else ROUTE_CRD
                where = f"{path.relative_to(EXAMPLES.parent)}: {document['metadata']['name']}"
                assert schema_errors(crd, document) == [], where


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda b: b["spec"]["kafka"].update(securityProtocol="TLS"), "is not one of"),
        (lambda b: b["spec"]["jms"].update(sources=[]), "should be non-empty"),
        (lambda b: b["spec"]["jms"]["sources"][0].update(queue="has space"), "does not match"),
        (lambda b: b["spec"].update(failover={"leaseDurationSeconds": 1}), "less than the minimum"),
        (lambda b: b["spec"].update(bridgeId="Not_A_Label"), "does not match"),
        (lambda b: b["spec"].pop("kafka"), "'kafka' is a required property"),
        (lambda b: b["spec"]["jms"].update(sourcse=[]), "Additional properties"),
    ],
)
def test_bridge_schema_rejects(change: Any, expected: str) -> None:
    body = simple_bridge()
    change(body)
    errors = schema_errors(BRIDGE_CRD, body)
    assert any(expected in e for e in errors), errors


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"kafkaTopic": "bad topic"}, "does not match"),
        ({"order": -1}, "less than the minimum"),
        ({"format": "xml"}, "is not one of"),
        ({"direction": "sideways"}, "is not one of"),
        ({"match": {"destinationType": "mailbox"}}, "is not one of"),
    ],
)
def test_route_schema_rejects(spec: dict[str, Any], expected: str) -> None:
    body = route("r", **spec)
    errors = schema_errors(ROUTE_CRD, body)
    assert any(expected in e for e in errors), errors


def test_defaults_fill_what_the_models_default() -> None:
    spec = crd_schema(crdgen.bridge_crd())["properties"]["spec"]["properties"]
    assert spec["delivery"]["default"] == "atLeastOnce"
    assert spec["spark"]["default"] == {}  # so that the nested defaults apply
    assert spec["spark"]["properties"]["executor"]["properties"]["instances"]["default"] == 1
    assert "default" not in spec["kafka"]["properties"]["sasl"]  # optional: absent means unset
    bean = spec["jms"]["properties"]["connectionFactory"]["properties"]["properties"]["additionalProperties"]
    assert bean == {"maxLength": 4096, "x-kubernetes-int-or-string": True}  # no type: CEL sees it as dyn


def test_a_union_of_scalars_is_int_or_string_or_kept_untyped() -> None:
    union = {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 8}], "description": "d"}
    int_or_string = {"description": "d (at most 8 characters)", "maxLength": 8, crdgen.INT_OR_STRING: True}
    assert crdgen.structural(union, {}) == int_or_string
    wider = {"anyOf": [{"type": "boolean"}, {"type": "string"}]}
    assert crdgen.structural(wider, {}) == {
        "description": "One of: boolean, string.",
        "x-kubernetes-preserve-unknown-fields": True,
    }


def test_generator_writes_and_checks(tmp_path: Any) -> None:
    assert crdgen.main(["--root", str(tmp_path), "--check"]) == 1
    assert crdgen.main(["--root", str(tmp_path)]) == 0
    assert crdgen.main(["--root", str(tmp_path), "--check"]) == 0
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.yaml"))
    assert written == sorted(
        [f"crds/{n}" for n in crdgen.crds()] + [f"charts/jms-bridge-operator/crds/{n}" for n in crdgen.crds()]
    )
    crd = load_yaml(tmp_path / "crds" / "jmsbridge.dev_jmsbridges.yaml")[0]
    assert crd == copy.deepcopy(crdgen.bridge_crd())
