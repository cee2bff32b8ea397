"""Our CRDs as a real API server takes them: accepted whole, every CEL rule within the server's cost
budget; and a rule over that budget refused, as ours once were (the test that would have caught it)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from testbed.apiserver.client import KubeApi, KubeApiError
from tests.operator.helpers import CHART_DIR, CRD_DIR, load_yaml

CRD_FILES = sorted(CRD_DIR.glob("*.yaml")) + sorted((CHART_DIR / "crds").glob("*.yaml"))


def renamed(crd: dict[str, Any], group: str) -> dict[str, Any]:
    """The same CRD in another group: a dry run of its creation beside the installed one."""
    crd = copy.deepcopy(crd)
    crd["spec"]["group"] = group
    crd["metadata"]["name"] = f"{crd['spec']['names']['plural']}.{group}"
    return crd


@pytest.mark.parametrize("path", CRD_FILES, ids=[f"{p.parent.parent.name}/{p.name}" for p in CRD_FILES])
def test_the_server_takes_our_crd(kube_api: KubeApi, path: Path) -> None:
    (crd,) = [d for d in load_yaml(path) if d["kind"] == "CustomResourceDefinition"]
    rules = str(crd).count("x-kubernetes-validations")
    assert rules > 0
    try:
        kube_api.create(renamed(crd, "crd-check.jmsbridge.dev"), dry_run=True)
    except KubeApiError as e:
        pytest.fail(f"the API server refused {path.name}: {e.message}")


def test_a_rule_over_the_cost_budget_is_refused(kube_api: KubeApi) -> None:
    """Every pair of an unbounded list of unbounded strings: what `spec.spark.pod`'s rule was before its
    names got their `maxLength`."""
    crd: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "costly.budget.example.com"},
        "spec": {
            "group": "budget.example.com",
            "names": {"kind": "Costly", "plural": "costly", "singular": "costly", "listKind": "CostlyList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {
                        "type": "object",
                        "properties": {
                            "mounts": {"type": "array", "items": {"type": "string"}},
                            "volumes": {"type": "array", "items": {"type": "string"}},
                        },
                        "x-kubernetes-validations": [{
                            "rule": "self.mounts.all(m, self.volumes.exists(v, v == m))",
                            "message": "every mount names a volume",
                        }],
                    }},
                }},
            }],
        },
    }  # fmt: skip
    with pytest.raises(KubeApiError, match="estimated rule cost exceeds budget") as refused:
        kube_api.create(crd, dry_run=True)
    assert refused.value.status == 422
    bounded = copy.deepcopy(crd)
    spec = bounded["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    for field in spec.values():
        field.update(maxItems=32)
        field["items"].update(maxLength=63)
    kube_api.create(bounded, dry_run=True)  # the same rule, bounded as ours are
