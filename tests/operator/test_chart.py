"""The Helm chart lints, renders, and what it renders is valid; the Argo CD health script it ships works."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from typing import Any

import pytest
import yaml
from jmsbridge_operator.naming import child_labels
from jmsbridge_operator.render import COMPONENT_JOB

from jmsbridge.cli import parser
from testbed.apiserver.client import yaml_documents
from tests.operator.helpers import CHART_DIR, CRD_DIR, EXAMPLES, REPO, load_yaml, strict

DOCS = REPO / "docs" / "operator.md"
ARGOCD_HEALTH = CHART_DIR / "files" / "argocd-health.lua"
# Serving every namespace, and where bridges run there (their service account goes there): the chart's
# defaults serve the release namespace only.
ALL_NAMESPACES = ("allNamespaces=true", "bridgeJob.namespaces={apps}")
MONITORS = (
    "metrics.podMonitor.enabled=true",
    "metrics.serviceMonitor.enabled=true",
    "bridgeJob.podMonitor.enabled=true",
)
MONITORING = ("monitoring.grafanaDashboard.enabled=true", "monitoring.prometheusRule.enabled=true")


def helm() -> str:
    path = shutil.which("helm")
    if path is None:
        message = "helm is not installed (scripts/install-helm.sh installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def helm_template(*values: str) -> subprocess.CompletedProcess[str]:
    args = [helm(), "template", "bridge", str(CHART_DIR), "--include-crds", "--namespace", "ops"]
    for value in values:
        args += ["--set", value]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def template(*values: str) -> list[dict[str, Any]]:
    """The rendered documents."""
    result = helm_template(*values)
    assert result.returncode == 0, result.stderr
    return yaml_documents(result.stdout)


def refused(*values: str) -> str:
    """Why helm refuses to render with these values (and only these)."""
    result = helm_template(*values)
    assert result.returncode != 0, "helm rendered the chart"
    return result.stderr


def one(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [d for d in documents if d["kind"] == kind]
    return found


def container(documents: list[dict[str, Any]]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = one(documents, "Deployment")["spec"]["template"]["spec"]["containers"]
    return containers[0]


def test_chart_lints() -> None:
    result = subprocess.run(
        [helm(), "lint", "--strict", str(CHART_DIR)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "values",
    [
        (),
        ("watchNamespaces={apps,payments}", "metrics.enabled=false"),
        ("replicaCount=1", "leaderElection.enabled=false", *MONITORS, *MONITORING),
    ],
)
def test_rendered_manifests_are_valid(values: tuple[str, ...]) -> None:
    documents = template(*values)
    kinds = sorted(d["kind"] for d in documents)
    assert kinds.count("CustomResourceDefinition") == 2 and "Deployment" in kinds
    # The chart's command line is the operator's: every argument parses.
    arguments = parser().parse_args([*container(documents)["command"][1:], *container(documents)["args"]])
    assert arguments.command == "operator"
    try:
        import kubernetes_validate
    except ImportError:  # at least every document parsed and names its kind
        assert all(d.get("apiVersion") and d.get("metadata", {}).get("name") for d in documents)
        return
    version = kubernetes_validate.latest_version()
    for document in documents:
        if not document["apiVersion"].startswith("monitoring.coreos.com/"):  # no schema offline
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


def test_the_defaults_serve_the_release_namespace() -> None:
    documents = template()  # no value set: `helm install` works as it is
    assert "--namespace=ops" in container(documents)["args"]
    assert "--all-namespaces" not in container(documents)["args"]
    cluster_roles = [d["metadata"]["name"] for d in documents if d["kind"] == "ClusterRole"]
    # read-only, namespaces and CRDs; and what Spark's driver needs, which the operator binds per bridge
    assert cluster_roles == ["jms-bridge-job", "bridge-jms-bridge-operator-discovery"]
    assert {(d["kind"], d["metadata"]["namespace"]) for d in documents if d["kind"] == "Role"} == {
        ("Role", "ops")
    }
    everywhere = container(template(*ALL_NAMESPACES))["args"]
    assert "--all-namespaces" in everywhere and not [a for a in everywhere if a.startswith("--namespace")]


def lint(*values: str) -> subprocess.CompletedProcess[str]:
    args = [helm(), "lint", "--strict", str(CHART_DIR)]
    for value in values:
        args += ["--set", value]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("replicaCount=two", "at '/replicaCount': got string, want integer"),
        ("operator.logFormat=xml", "at '/operator/logFormat': value must be one of 'json', 'full'"),
        ("operator.logFromat=json", "at '/operator': additional properties 'logFromat' not allowed"),
        ("metrics.podMonitor.enabled=yes", "at '/metrics/podMonitor/enabled': got string, want boolean"),
        ("watchNamespaces={Apps}", "at '/watchNamespaces/0'"),
        ("allNamespaces=true,watchNamespaces={apps}", "at '/watchNamespaces': maxItems: got 1, want 0"),
        ("leaderElection.enabled=false", "at '/replicaCount': maximum: got 2, want 1"),
        (
            "monitoring.prometheusRule.enable=true",
            "at '/monitoring/prometheusRule': additional properties 'enable' not allowed",
        ),
    ],
)
def test_a_wrong_value_is_refused_naming_it_by_template_and_lint(value: str, message: str) -> None:
    assert message in refused(value)
    linted = lint(value)
    assert linted.returncode != 0 and message in linted.stdout + linted.stderr


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
        ("Role", "ops"),  # leader election: the operator's Lease in its own namespace
        ("RoleBinding", "ops"),
    }
    cluster_roles = [d for d in documents if d["kind"] == "ClusterRole"]
    assert [r["metadata"]["name"] for r in cluster_roles] == [
        "jms-bridge-job",  # bound to no one by the chart: the operator binds it per bridge
        "bridge-jms-bridge-operator-discovery",
    ]
    assert not [
        d for d in documents if d["kind"] == "RoleBinding" and d["roleRef"]["name"] == "jms-bridge-job"
    ]
    assert all(set(rule["verbs"]) <= {"list", "watch"} for rule in cluster_roles[1]["rules"])
    args = next(d for d in documents if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][
        0
    ]["args"]
    assert "--namespace=apps" in args and "--all-namespaces" not in args


def test_the_operator_writes_leases_and_reads_no_secrets_cluster_wide() -> None:
    """What RBAC the operator needs, its end-to-end tests find out on a real API server under exactly this
    chart's RBAC (testbed/apiserver/chart.py); what it must not get, this says: it creates the bridges'
    Leases and may update them (to grant that to each bridge's own account, RBAC lets no one grant more
    than it holds), never deletes them; it creates key Secrets but reads Secrets per namespace (below),
    never cluster-wide; and it may bind the ClusterRole jms-bridge-job and no other."""
    role = next(
        d
        for d in template(*ALL_NAMESPACES)
        if d["kind"] == "ClusterRole" and d["metadata"]["name"].endswith("-operator")  # the operator's own
    )
    granted = {
        (resource, verb) for rule in role["rules"] for resource in rule["resources"] for verb in rule["verbs"]
    }
    assert {verb for resource, verb in granted if resource == "leases"} == {
        "get",
        "list",
        "watch",
        "create",
        "update",
    }
    assert {verb for resource, verb in granted if resource == "secrets"} == {"create"}
    binds = [rule for rule in role["rules"] if "bind" in rule["verbs"]]
    assert binds == [
        {
            "apiGroups": ["rbac.authorization.k8s.io"],
            "resources": ["clusterroles"],
            "verbs": ["bind"],
            "resourceNames": ["jms-bridge-job"],
        }
    ]


def secret_grants(documents: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(kind, namespace, verb) of every role that grants reading Secrets (creating the bridges' key
    Secrets reads none)."""
    return {
        (d["kind"], d["metadata"].get("namespace", "*"), verb)
        for d in documents
        if d["kind"] in ("Role", "ClusterRole")
        for rule in d["rules"]
        if "secrets" in rule["resources"]
        for verb in rule["verbs"]
        if verb != "create"
    }


def test_the_kafka_and_secret_checks_read_secrets_only_where_bridges_run() -> None:
    """They read the Secrets each bridge names (its SASL credentials, the Secrets its pods use): get only,
    never list, and with allNamespaces in the namespaces where bridges run (bridgeJob.namespaces), not
    everywhere. With both checks off, no access to Secrets at all."""
    assert secret_grants(template()) == {("Role", "ops", "get")}
    assert secret_grants(template("watchNamespaces={apps,payments}")) == {
        ("Role", "apps", "get"),
        ("Role", "payments", "get"),
    }
    everywhere = template("allNamespaces=true", "bridgeJob.namespaces={apps,payments}")
    assert secret_grants(everywhere) == {("Role", "apps", "get"), ("Role", "payments", "get")}
    bindings = [
        d for d in everywhere if d["kind"] == "RoleBinding" and d["metadata"]["name"].endswith("-secrets")
    ]
    assert {
        (b["metadata"]["namespace"], b["subjects"][0]["name"], b["subjects"][0]["namespace"])
        for b in bindings
    } == {
        ("apps", "bridge-jms-bridge-operator", "ops"),
        ("payments", "bridge-jms-bridge-operator", "ops"),
    }
    # Service accounts of the platform team's, and nowhere listed to read Secrets in: said, not guessed.
    assert (
        "list them in bridgeJob.namespaces, or set operator.kafkaChecks.enabled=false and "
        "operator.secretChecks.intervalSeconds=0"
    ) in refused("allNamespaces=true", "bridgeJob.rbac.create=false")
    either_reads = ["operator.kafkaChecks.enabled=false", "operator.secretChecks.intervalSeconds=0"]
    for one in either_reads:  # one of the two still needs them
        assert secret_grants(template(one)) == {("Role", "ops", "get")}
    none = ("operator.kafkaChecks.enabled=false", "operator.secretChecks.intervalSeconds=0")
    assert secret_grants(template("allNamespaces=true", "bridgeJob.rbac.create=false", *none)) == set()
    assert secret_grants(template(*ALL_NAMESPACES, *none)) == set()
    assert secret_grants(template(*none)) == set()
    operator_args = next(d for d in template() if d["kind"] == "Deployment")["spec"]["template"]["spec"][
        "containers"
    ][0]["args"]
    assert "--secret-check-interval=60" in operator_args


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


def test_the_job_image_value_becomes_the_operators_and_the_operator_reads_it() -> None:
    from jmsbridge_operator.options import ENV_JOB_IMAGE, OperatorOptions

    from bridge_job.config import DEFAULT_JOB_IMAGE
    from jmsbridge.cli import parser
    from jmsbridge.operator_cli import operator_environment

    assert not any(a.startswith("--job-image") for a in container(template())["args"])  # the operator's own
    (flag,) = [
        a
        for a in container(template("bridgeJob.image=registry.example.com/bridge-job:1.1.0"))["args"]
        if a.startswith("--job-image")
    ]
    env = operator_environment(parser().parse_args(["operator", flag]))
    assert OperatorOptions.from_env(env).job_image == "registry.example.com/bridge-job:1.1.0"
    assert env == {ENV_JOB_IMAGE: "registry.example.com/bridge-job:1.1.0"}
    assert OperatorOptions.from_env({}).job_image == DEFAULT_JOB_IMAGE


def test_the_bridge_policy_values_become_the_operators_policy() -> None:
    from jmsbridge_operator.options import OperatorOptions
    from jmsbridge_operator.policy import Policy

    from jmsbridge.cli import parser
    from jmsbridge.operator_cli import operator_environment

    def policy(*values: str) -> Policy:
        flags = [
            a
            for a in container(template(*values))["args"]
            if a.startswith(("--bridge-", "--privileged", "--unmarked"))
        ]
        return OperatorOptions.from_env(
            operator_environment(parser().parse_args(["operator", *flags]))
        ).policy

    assert policy() == Policy()  # the bridge's own account only, restricted pods, marked Secrets
    allowed = policy(
        "bridgePolicy.serviceAccounts={spark,etl}",
        "bridgePolicy.privilegedPods=true",
        "bridgePolicy.unmarkedSecrets=true",
    )
    assert allowed == Policy(frozenset({"spark", "etl"}), privileged_pods=True, unmarked_secrets=True)


def test_image_registry_moves_both_images() -> None:
    from bridge_job import __version__
    from bridge_job.config import JOB_IMAGE

    default = container(template())
    assert default["image"] == f"ghcr.io/jmsbridge/jms-bridge-operator:{__version__}"
    assert JOB_IMAGE == "ghcr.io/jmsbridge/bridge-job"  # the operator's own default: no --job-image needed
    assert not any(a.startswith("--job-image") for a in default["args"])

    mirrored = container(template("image.registry=registry.example.com/mirror"))
    assert mirrored["image"] == f"registry.example.com/mirror/jmsbridge/jms-bridge-operator:{__version__}"
    assert f"--job-image=registry.example.com/mirror/jmsbridge/bridge-job:{__version__}" in mirrored["args"]
    chosen = container(template("image.registry=registry.example.com", "bridgeJob.image=my/job:1"))
    assert [a for a in chosen["args"] if a.startswith("--job-image")] == ["--job-image=my/job:1"]
    assert "at '/image/registry'" in refused("image.registry=https://registry.example.com/")


def test_extra_env_volumes_and_mounts_of_the_operator() -> None:
    operator = container(
        template(
            "operator.extraEnv[0].name=HTTPS_PROXY",
            "operator.extraEnv[0].value=http://proxy:3128",
            "operator.extraVolumes[0].name=ca",
            "operator.extraVolumes[0].configMap.name=corporate-ca",
            "operator.extraVolumeMounts[0].name=ca",
            "operator.extraVolumeMounts[0].mountPath=/etc/corporate-ca",
            "operator.extraVolumeMounts[0].readOnly=true",
        )
    )
    assert {"name": "HTTPS_PROXY", "value": "http://proxy:3128"} in operator["env"]
    assert operator["volumeMounts"] == [
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "ca", "mountPath": "/etc/corporate-ca", "readOnly": True},
    ]
    documents = template(
        "operator.extraVolumes[0].name=ca", "operator.extraVolumes[0].configMap.name=corporate-ca"
    )
    volumes = one(documents, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert volumes == [{"name": "tmp", "emptyDir": {}}, {"name": "ca", "configMap": {"name": "corporate-ca"}}]
    assert "at '/operator/extraVolumeMounts/0': missing property 'mountPath'" in refused(
        "operator.extraVolumeMounts[0].name=ca"
    )


def test_the_bridges_service_accounts_are_the_operator_s_to_make_not_the_chart_s() -> None:
    """No shared account or key per namespace any more: each bridge gets its own from the operator
    (identity.py), so allNamespaces needs no list of namespaces for them; the chart makes only the
    ClusterRole the operator binds, with what Spark's driver does and nothing on Leases or Secrets."""
    documents = template(
        "allNamespaces=true", "operator.kafkaChecks.enabled=false", "operator.secretChecks.intervalSeconds=0"
    )
    assert not [
        d
        for d in documents
        if d["kind"] in ("ServiceAccount", "Secret") and "jms-bridge-job" in d["metadata"]["name"]
    ]
    role = next(d for d in documents if d["metadata"]["name"] == "jms-bridge-job")
    granted = {(r, tuple(rule["verbs"])) for rule in role["rules"] for r in rule["resources"]}
    assert granted == {
        ("pods", ("get", "list", "watch", "create", "patch", "delete", "deletecollection")),
        ("configmaps", ("create", "delete", "deletecollection")),  # no get, update, patch: not another's
        ("services", ("delete", "deletecollection")),
        ("persistentvolumeclaims", ("create", "list", "delete", "deletecollection")),
    }
    # The platform team's own instead: then not even the ClusterRole.
    assert not [
        d for d in template("bridgeJob.rbac.create=false") if d["metadata"]["name"] == "jms-bridge-job"
    ]


def test_replicas_elect_a_leader_over_a_lease_in_the_release_namespace() -> None:
    documents = template()
    deployment = one(documents, "Deployment")
    assert deployment["spec"]["replicas"] == 2 and deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    operator = container(documents)
    assert {"--leader-election", "--leader-election-lease-seconds=15"} <= set(operator["args"])
    assert {
        "name": "POD_NAMESPACE",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
    } in operator["env"]
    role = next(
        d for d in documents if d["kind"] == "Role" and d["metadata"]["name"].endswith("leader-election")
    )
    assert role["metadata"]["namespace"] == "ops"
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "watch", "create", "update"],
        }
    ]
    binding = next(
        d
        for d in documents
        if d["kind"] == "RoleBinding" and d["roleRef"]["name"] == role["metadata"]["name"]
    )
    assert binding["subjects"][0]["name"] == deployment["spec"]["template"]["spec"]["serviceAccountName"]
    assert one(documents, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1

    single = template("replicaCount=1", "leaderElection.enabled=false")
    assert one(single, "Deployment")["spec"]["strategy"] == {"type": "Recreate"}
    assert "--leader-election" not in container(single)["args"]
    assert not [
        d
        for d in single
        if d["kind"] == "PodDisruptionBudget" or d["metadata"]["name"].endswith("leader-election")
    ]
    # Every replica would reconcile every bridge: the chart's schema refuses it.
    assert "at '/replicaCount': maximum: got 2, want 1" in refused("leaderElection.enabled=false")


def test_probes_resources_and_a_restricted_security_context() -> None:
    documents = template()
    operator = container(documents)
    health = next(p for p in operator["ports"] if p["name"] == "health")
    assert health["containerPort"] == 8080 and "--liveness=http://0.0.0.0:8080/healthz" in operator["args"]
    for probe in ("livenessProbe", "readinessProbe"):
        assert operator[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert set(operator["resources"]["requests"]) == {"cpu", "memory"}
    pod = one(documents, "Deployment")["spec"]["template"]["spec"]
    # The Pod Security Standard "restricted", field by field.
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = operator["securityContext"]
    assert security["allowPrivilegeEscalation"] is False and security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert {"name": "tmp", "mountPath": "/tmp"} in operator["volumeMounts"]  # the one writable place


def test_pod_and_service_monitors_scrape_the_metrics_port() -> None:
    documents = template(*MONITORS[:2], "metrics.podMonitor.labels.release=prometheus")
    selector = one(documents, "Deployment")["spec"]["selector"]["matchLabels"]
    pod_monitor, service_monitor = one(documents, "PodMonitor"), one(documents, "ServiceMonitor")
    assert pod_monitor["metadata"]["labels"]["release"] == "prometheus"
    assert pod_monitor["spec"]["selector"]["matchLabels"] == selector
    assert pod_monitor["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"
    assert "metrics" in {p["name"] for p in container(documents)["ports"]}
    service = one(documents, "Service")
    assert service_monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert service_monitor["spec"]["endpoints"][0]["port"] == "metrics"
    assert "metrics" in {p["name"] for p in service["spec"]["ports"]}
    assert not [
        d for d in template() if d["apiVersion"].startswith("monitoring.coreos.com/")
    ]  # off by default
    no_service = "metrics.serviceMonitor.enabled=true,metrics.service.enabled=false"
    assert "at '/metrics/service/enabled': value must be true" in refused(no_service)


def test_the_bridges_driver_pods_are_scraped_where_bridges_run() -> None:
    """The job's metrics (which the chart's alerts and dashboard read) are served by the driver pods, on
    the port the operator names `metrics`, with the labels it gives every bridge's Spark pods."""
    documents = [d for d in template(*MONITORS) if d["kind"] == "PodMonitor"]
    jobs = one([d for d in documents if d["metadata"]["name"].endswith("-bridge-jobs")], "PodMonitor")
    spec = jobs["spec"]
    assert spec["selector"]["matchLabels"].items() <= child_labels("orders", COMPONENT_JOB, "primary").items()
    assert spec["podMetricsEndpoints"][0]["port"] == "metrics"
    assert spec["namespaceSelector"] == {"matchNames": ["ops"]}  # the release namespace, served
    listed = template("bridgeJob.podMonitor.enabled=true", "bridgeJob.namespaces={apps,payments}")
    assert one(listed, "PodMonitor")["spec"]["namespaceSelector"] == {"matchNames": ["apps", "payments"]}


# ---------------------------------------------------------------------------------------------------
# Argo CD health (the chart's files/argocd-health.lua, run with lupa where installed)


def health(obj: dict[str, Any]) -> tuple[str, str]:
    lupa = pytest.importorskip("lupa")
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)

    def to_lua(value: Any) -> Any:
        if isinstance(value, dict):
            return runtime.table_from({k: to_lua(v) for k, v in value.items()})
        if isinstance(value, list):
            return runtime.table_from([to_lua(v) for v in value])
        return value

    check = runtime.eval(f"function(obj)\n{ARGOCD_HEALTH.read_text()}\nend")
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
        # The spark-operator resubmits a failed application, or a rollout is under way: not Degraded.
        (
            with_conditions(
                ("Ready", "False", "ApplicationRestarting"), ("Reconciling", "True", "ApplicationRestarting")
            ),
            "Progressing",
        ),
        (with_conditions(("Ready", "True", "Running"), ("Reconciling", "True", "RollingOut")), "Progressing"),
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


def test_the_docs_point_at_the_charts_health_check_instead_of_a_copy() -> None:
    docs = DOCS.read_text()
    assert "charts/jms-bridge-operator/files/argocd-health.lua" in docs and "```lua" not in docs


# ---------------------------------------------------------------------------------------------------
# The chart's README, generated from the comments of values.yaml (scripts/chart_readme.py)


def _chart_readme() -> Any:
    spec = importlib.util.spec_from_file_location("chart_readme", REPO / "scripts" / "chart_readme.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_generated_from_the_values() -> None:
    committed = (CHART_DIR / "README.md").read_text(encoding="utf-8")
    assert committed == _chart_readme().readme(), "run python scripts/chart_readme.py"


def test_every_value_is_in_the_readme_with_a_description() -> None:
    generator = _chart_readme()
    text = (CHART_DIR / "values.yaml").read_text(encoding="utf-8")
    values = yaml.safe_load(text)
    rows = [row for key in generator.keys(text) for row in generator.rows(key, values)]
    assert [name for name, _, description in rows if not description] == []

    def leaves(value: Any, path: str) -> set[str]:
        if isinstance(value, dict) and value:
            return {leaf for k, v in value.items() for leaf in leaves(v, f"{path}.{k}" if path else k)}
        return {path}

    covered = {name for name, default, _ in rows if default is not None}
    assert {
        leaf for leaf in leaves(values, "") if not any(leaf == c or leaf.startswith(f"{c}.") for c in covered)
    } == set()


def test_the_readme_generator_reads_comments_above_and_beside_a_key() -> None:
    generator = _chart_readme()
    text = "# the section\na:\n  # above\n  b: 1  # beside\n  c: {}\n\n# gone after a blank line\n\nd: x\n"
    values = yaml.safe_load(text)
    assert [r for key in generator.keys(text) for r in generator.rows(key, values)] == [
        ("a", None, "the section"),
        ("a.b", 1, "above beside"),
        ("a.c", {}, ""),
        ("d", "x", ""),
    ]


def test_network_policies_admit_only_probes_metrics_and_the_bridges_own_pods() -> None:
    """Anyone on the pod network reaches the operator's probe and metrics ports only, and the bridges' pods
    only at their metrics port: Spark's RPC and the tasks' reports only from the bridges' pods."""
    policies = {
        (d["metadata"]["namespace"], d["metadata"]["name"]): d["spec"]
        for d in template("bridgeJob.namespaces={apps,payments}")
        if d["kind"] == "NetworkPolicy"
    }
    assert set(policies) == {("ops", "bridge-jms-bridge-operator")} | {
        (ns, "jms-bridge-job-ingress") for ns in ("apps", "payments")
    }
    operator = policies[("ops", "bridge-jms-bridge-operator")]
    assert operator["policyTypes"] == ["Ingress"]
    assert operator["ingress"] == [
        {"ports": [{"port": 8080, "protocol": "TCP"}, {"port": 9090, "protocol": "TCP"}]}
    ]
    job = {"app.kubernetes.io/name": "jms-bridge", "app.kubernetes.io/component": "job"}
    for namespace in ("apps", "payments"):
        bridges = policies[(namespace, "jms-bridge-job-ingress")]
        assert bridges["podSelector"] == {"matchLabels": job}
        assert bridges["ingress"] == [
            {"from": [{"podSelector": {"matchLabels": job}}]},
            {"ports": [{"port": 9464, "protocol": "TCP"}]},
        ]
    assert not [d for d in template("networkPolicy.enabled=false") if d["kind"] == "NetworkPolicy"]
