"""The Helm chart lints, renders, and what it renders is valid; the Argo CD health script works."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Any

import pytest
import yaml

from tests.operator.helpers import CHART_DIR, CRD_DIR, EXAMPLES, REPO, load_yaml, strict

DOCS = REPO / "docs" / "operator.md"


def helm() -> str:
    path = shutil.which("helm")
    if path is None:
        message = "helm is not installed (scripts/install-helm.sh installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def template(*values: str) -> list[dict[str, Any]]:
    args = [helm(), "template", "bridge", str(CHART_DIR), "--include-crds", "--namespace", "ops"]
    for value in values:
        args += ["--set", value]
    result = subprocess.run(args, capture_output=True, text=True, check=True, timeout=60)
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def test_chart_lints() -> None:
    result = subprocess.run(
        [helm(), "lint", "--strict", str(CHART_DIR)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("values", [(), ("watchNamespaces={apps,payments}", "metrics.enabled=false")])
def test_rendered_manifests_are_valid(values: tuple[str, ...]) -> None:
    documents = template(*values)
    kinds = sorted(d["kind"] for d in documents)
    assert kinds.count("CustomResourceDefinition") == 2 and "Deployment" in kinds
    try:
        import kubernetes_validate
    except ImportError:  # at least every document parsed and names its kind
        assert all(d.get("apiVersion") and d.get("metadata", {}).get("name") for d in documents)
        return
    version = kubernetes_validate.latest_version()
    for document in documents:
        kubernetes_validate.validate(document, version, strict=True)
    broken = next(d for d in documents if d["kind"] == "Deployment")
    broken["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError):  # the validator does look
        kubernetes_validate.validate(broken, version, strict=True)


def test_chart_crds_are_the_generated_ones() -> None:
    rendered = {d["metadata"]["name"]: d for d in template() if d["kind"] == "CustomResourceDefinition"}
    for path in CRD_DIR.glob("*.yaml"):
        crd = load_yaml(path)[0]
        assert rendered[crd["metadata"]["name"]] == crd


def test_example_resources_validate_against_the_rendered_crds() -> None:
    import jsonschema

    schemas = {
        d["spec"]["names"]["kind"]: strict(d["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
        for d in template()
        if d["kind"] == "CustomResourceDefinition"
    }
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for document in load_yaml(path):
            if document["kind"] in schemas:
                jsonschema.validate(document, schemas[document["kind"]])


def test_namespaced_install_gets_roles_not_cluster_roles() -> None:
    documents = template("watchNamespaces={apps,payments}")
    roles = {
        (d["kind"], d["metadata"].get("namespace")) for d in documents if d["kind"] in ("Role", "RoleBinding")
    }
    assert roles == {
        ("Role", "apps"),
        ("Role", "payments"),
        ("RoleBinding", "apps"),
        ("RoleBinding", "payments"),
    }
    cluster_roles = [d for d in documents if d["kind"] == "ClusterRole"]
    assert [r["metadata"]["name"] for r in cluster_roles] == ["bridge-jms-bridge-operator-discovery"]
    assert all(set(rule["verbs"]) <= {"list", "watch"} for r in cluster_roles for rule in r["rules"])
    args = next(d for d in documents if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][
        0
    ]["args"]
    assert "--namespace=apps" in args and "--all-namespaces" not in args


def test_rbac_covers_exactly_what_the_operator_touches() -> None:
    role = next(
        d
        for d in template()
        if d["kind"] == "ClusterRole" and not d["metadata"]["name"].endswith("discovery")
    )
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    for needed in [
        ("jmsbridge.dev", "jmsbridges", "watch"),
        ("jmsbridge.dev", "jmsbridges", "patch"),  # kopf's finalizer and annotations
        ("jmsbridge.dev", "jmsbridges/status", "patch"),
        ("jmsbridge.dev", "jmsbridgeroutes/status", "patch"),
        ("sparkoperator.k8s.io", "sparkapplications", "create"),
        ("sparkoperator.k8s.io", "sparkapplications", "update"),
        ("sparkoperator.k8s.io", "sparkapplications", "delete"),
        ("", "configmaps", "update"),
        ("", "events", "create"),
        ("", "secrets", "get"),  # the Kafka checks read each bridge's SASL credentials
    ]:
        assert needed in granted
    assert {verb for _, resource, verb in granted if resource == "secrets"} == {"get"}  # never list them

    unchecked = next(
        d
        for d in template("operator.kafkaChecks.enabled=false")
        if d["kind"] == "ClusterRole" and not d["metadata"]["name"].endswith("discovery")
    )
    assert not any("secrets" in rule["resources"] for rule in unchecked["rules"])


def test_kafka_check_values_become_operator_options() -> None:
    def args(*values: str) -> list[str]:
        deployment = next(d for d in template(*values) if d["kind"] == "Deployment")
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        return list(container["args"])

    assert {"--kafka-check-interval=60", "--kafka-grace-period=300"} <= set(args())
    custom = args("operator.kafkaChecks.intervalSeconds=30", "operator.kafkaChecks.gracePeriodSeconds=120")
    assert {"--kafka-check-interval=30", "--kafka-grace-period=120"} <= set(custom)
    off = args("operator.kafkaChecks.enabled=false")
    assert "--no-kafka-checks" in off and not any(a.startswith("--kafka-") for a in off)


# ---------------------------------------------------------------------------------------------------
# Argo CD health (the Lua script in docs/operator.md, run with lupa where installed)


def health(obj: dict[str, Any]) -> tuple[str, str]:
    lupa = pytest.importorskip("lupa")
    script = re.search(r"```lua\n(.*?)```", DOCS.read_text(), re.S)
    assert script is not None
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)

    def to_lua(value: Any) -> Any:
        if isinstance(value, dict):
            return runtime.table_from({k: to_lua(v) for k, v in value.items()})
        if isinstance(value, list):
            return runtime.table_from([to_lua(v) for v in value])
        return value

    check = runtime.eval(f"function(obj)\n{script.group(1)}\nend")
    result = check(to_lua(obj))
    return str(result["status"]), str(result["message"] or "")


def with_conditions(
    *conditions: tuple[str, str, str], generation: int = 1, observed: int = 1
) -> dict[str, Any]:
    return {
        "metadata": {"generation": generation},
        "status": {
            "observedGeneration": observed,
            "conditions": [
                {"type": t, "status": s, "reason": r, "message": f"{r} here"} for t, s, r in conditions
            ],
        },
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"metadata": {"generation": 1}}, "Progressing"),
        (with_conditions(("Ready", "True", "Running")), "Healthy"),
        (with_conditions(("Ready", "True", "Running"), generation=2), "Progressing"),
        (with_conditions(("Ready", "False", "Starting"), ("Reconciling", "True", "Starting")), "Progressing"),
        (
            with_conditions(
                ("Ready", "False", "ApplicationFailed"), ("Stalled", "True", "ApplicationFailed")
            ),
            "Degraded",
        ),
        (with_conditions(("Ready", "False", "Suspended")), "Suspended"),
        (
            with_conditions(
                ("Accepted", "False", "DuplicateOrder"),
                ("Ready", "False", "DuplicateOrder"),
                ("Stalled", "True", "DuplicateOrder"),
            ),
            "Degraded",
        ),
    ],
)
def test_argocd_health(obj: dict[str, Any], expected: str) -> None:
    status, message = health(obj)
    assert status == expected
    if expected == "Degraded":
        assert message.startswith(obj["status"]["conditions"][-1]["reason"])
