"""A rotated Secret rolls the bridge: which Secrets the pods read, and what the plan makes of their
versions (pure); what following them costs at rest, through the kopf runtime (the rollout itself:
`test_operator.py`, the spec-change rollout's `secret-rotated` case)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from jmsbridge_operator import naming
from jmsbridge_operator.acceptance import validate
from jmsbridge_operator.kafka_checks.gate import open_gate
from jmsbridge_operator.planning import Observed, plan
from jmsbridge_operator.render import secret_names, secrets_version_of
from jmsbridge_operator.secret_versions import ABSENT, version_of

from testbed.apiserver.client import KubeApi
from testbed.resources import NAMESPACE, STANDBY, simple_bridge
from tests.operator.helpers import route
from tests.operator.test_api_economy import OPERATOR_AGENTS, asked, reads, reconciliations
from tests.operator.test_operator import AMQ_SECRET, RUNNING, View
from tests.operator.test_planning import NOW, as_stored, cluster_bridge, verbs

KEY = naming.bridge_key_secret("simple")  # the bridge's own signing key (identity.py)


def reading_secrets(**spec: Any) -> dict[str, Any]:
    body = cluster_bridge(**spec)
    body["spec"]["jms"]["credentialsSecretRef"] = {"name": "amq-credentials"}
    return body


def pair_running(bridge: dict[str, Any], versions: dict[str, str]) -> Observed:
    """A standby pair created with these versions, both running (the primary active)."""
    first = plan(Observed(bridge, [], secret_versions=versions), open_gate, NOW)
    config_map = next(as_stored(w.body) for w in first.writes if w.kind == "ConfigMap")
    apps = [as_stored(w.body, "RUNNING") for w in first.writes if w.kind == naming.SPARK_KIND]
    status = {**first.status, "activeInstance": "simple-primary"}
    return Observed({**bridge, "status": status}, [], config_map, apps, secret_versions=versions)


def carried(observed: Observed, decided_writes: list[Any]) -> dict[str, str | None]:
    apps = {str(a["metadata"]["name"]): a for a in observed.applications}
    apps.update({w.name: w.body for w in decided_writes if w.kind == naming.SPARK_KIND})
    return {name: secrets_version_of(app) for name, app in sorted(apps.items())}


def test_the_secrets_the_pods_read_are_their_env_references_and_secret_volumes() -> None:
    body = reading_secrets()
    body["spec"]["kafka"]["sasl"] = {
        "mechanism": "SCRAM-SHA-512",
        "credentialsSecretRef": {"name": "kafka-user"},
    }
    body["spec"]["kafka"]["securityProtocol"] = "SASL_SSL"
    body["spec"]["spark"] = {
        "pod": {
            "imagePullSecrets": ["registry-pull"],  # read by the kubelet's pull, not by the job
            "env": [{"name": "EXTRA", "valueFrom": {"secretKeyRef": {"name": "extra", "key": "value"}}}],
            "volumes": [
                {"name": "kafka-ca", "secret": {"secretName": "kafka-cluster-ca"}},
                {"name": "both", "projected": {"sources": [{"secret": {"name": "projected-one"}}]}},
                {"name": "scratch", "emptyDir": {}},
            ],
            "volumeMounts": [
                {"name": "kafka-ca", "mountPath": "/etc/kafka-ca"},
                {"name": "both", "mountPath": "/etc/both"},
                {"name": "scratch", "mountPath": "/scratch"},
            ],
        }
    }
    checked = validate(body, [], namespace="apps")
    assert checked.bridge is not None and checked.config is not None, checked.problems
    assert secret_names(checked.bridge, checked.config) == (
        "amq-credentials",
        "extra",
        "kafka-cluster-ca",
        "kafka-user",
        "projected-one",
        KEY,  # the bridge's signing key (a new one restarts it)
    )


def test_a_version_is_uid_and_resource_version_never_the_data() -> None:
    secret = {"metadata": {"uid": "u-1", "resourceVersion": "42"}, "data": {"password": "c2VjcmV0"}}
    assert version_of(secret) == "u-1/42"
    assert version_of(None) == ABSENT


def test_a_new_version_rolls_the_standby_first_and_the_same_version_writes_nothing() -> None:
    bridge = reading_secrets(**STANDBY)
    observed = pair_running(bridge, {"amq-credentials": "u-1/42", KEY: "k-1/7"})
    assert plan(observed, open_gate, NOW).writes == []  # an operator restart reads the same version
    assert len(set(carried(observed, []).values())) == 1 and None not in carried(observed, []).values()

    rotated = dataclasses.replace(observed, secret_versions={"amq-credentials": "u-1/43", KEY: "k-1/7"})
    decided = plan(rotated, open_gate, NOW)
    assert verbs(decided) == [("replace", "SparkApplication", "simple-secondary")]  # the standby first
    assert decided.writes[0].message == (
        "Updated SparkApplication simple-secondary "
        "(a Secret it reads changed; the spark-operator restarts it)"
    )
    versions = carried(observed, decided.writes)
    assert versions["simple-secondary"] != versions["simple-primary"]


def test_an_unknown_version_keeps_what_each_application_carries() -> None:
    bridge = reading_secrets(**STANDBY)
    observed = pair_running(bridge, {"amq-credentials": "u-1/42", KEY: "k-1/7"})
    before = carried(observed, [])
    unknowns: list[dict[str, str] | None] = [{}, None]  # never read (the API refused), or not followed
    for unknown in unknowns:
        decided = plan(dataclasses.replace(observed, secret_versions=unknown), open_gate, NOW)
        assert decided.writes == []
        assert carried(observed, decided.writes) == before


def test_a_bridge_whose_secrets_are_unknown_carries_no_version() -> None:
    decided = plan(Observed(cluster_bridge(), [], secret_versions={}), open_gate, NOW)
    apps = [w.body for w in decided.writes if w.kind == naming.SPARK_KIND]
    assert apps and all(secrets_version_of(app) is None for app in apps)
    assert decided.secrets == (KEY,)  # the least a bridge reads: its signing key


def test_at_rest_a_secret_costs_one_get_per_interval_and_no_reconciliation(operator: KubeApi) -> None:
    """Read every second here (tests/operator/conftest.py); deployed, every minute."""
    view = View(operator)
    bridge = simple_bridge()
    bridge["spec"]["jms"]["credentialsSecretRef"] = {"name": "amq-credentials"}
    view.create(AMQ_SECRET, bridge, route("out"))
    view.wait(lambda: "simple-primary" in view.apps(), "the application")
    view.play_spark("simple-primary", "RUNNING")
    view.wait_conditions("JmsBridge", "simple", RUNNING)
    first = secrets_version_of(view.apps()["simple-primary"])
    assert first is not None
    # What the last events started is done (a busy machine delays it): no reconciliation for 2 s, in
    # which the Secret was looked at twice.
    last = [reconciliations(), time.monotonic()]

    def quiet() -> bool:
        if (now := reconciliations()) != last[0]:
            last[:] = [now, time.monotonic()]
        return time.monotonic() - last[1] >= 2.0

    view.wait(quiet, "the reconciliations to settle")

    before, done = view.kube.requests_by_resource(*OPERATOR_AGENTS), reconciliations()
    view.wait(lambda: asked(view.kube, before).get("get secrets", 0) >= 3, "three looks at the Secret")
    requests = asked(view.kube, before)
    assert reconciliations() == done  # nothing changed: nothing planned
    assert reads(requests) == {}
    assert {what for what in requests if not what.startswith(("list ", "watch ", "get secrets"))} == set()

    view.kube.patch("v1", "Secret", "amq-credentials", NAMESPACE, {"stringData": {"password": "second"}})
    view.wait(lambda: secrets_version_of(view.apps()["simple-primary"]) not in (first, None), "the roll")
    view.wait(lambda: reconciliations() > done, "the roll counted")  # once its status is written too
