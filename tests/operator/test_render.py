"""Rendering a bridge into its ConfigMap and SparkApplications (pure: no cluster)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from jmsbridge_operator import naming
from jmsbridge_operator.render import render

from bridge_job.config import (
    CONFIG_MOUNT_PATH,
    ENV_OWNER_NAME,
    ENV_OWNER_UID,
    JMS_LIBRARY_DIR,
    JOB_MAIN_FILE,
    JmsBridge,
    JmsBridgeRoute,
    JobConfig,
    job_config,
)
from bridge_job.config.spark_settings import SPARK_SETTINGS
from bridge_job.jms.jvm import expand_classpath
from bridge_job.jms.settings import DEFAULT_CLASSPATH
from testbed.apiserver.spark_crd import spark_crd_file
from tests.operator.helpers import EXAMPLES, SPARK_CRD, bridge, load_yaml, require_reference, schema_errors


def _rendered(body: dict[str, Any] | None = None, routes: list[dict[str, Any]] | None = None) -> Any:
    body = body or bridge()
    body["metadata"].setdefault("uid", "uid-1")
    model = JmsBridge.model_validate(body)
    route_models = [JmsBridgeRoute.model_validate(r) for r in (routes if routes is not None else _routes())]
    return render(model, job_config(model, route_models))


def _routes() -> list[dict[str, Any]]:
    return load_yaml(EXAMPLES / "routes.yaml")


def test_standby_gives_two_applications_one_gives_one() -> None:
    assert sorted(_rendered().applications) == ["primary", "secondary"]
    single = bridge(failover={"standby": False})
    assert sorted(_rendered(single).applications) == ["primary"]


def test_config_map_holds_the_job_config() -> None:
    config_map = _rendered().config_map
    assert config_map["metadata"]["name"] == "orders-config"
    ((key, text),) = config_map["data"].items()  # one file: the spec's (config_files.py)
    assert re.fullmatch(r"job-[0-9a-f]{12}\.yaml", key)
    config = JobConfig.model_validate(yaml.safe_load(text))
    assert [r.name for r in config.routes] == ["confirmations-to-jms", "orders-to-kafka", "prices-to-kafka"]
    assert config.bridge_id == "apps-orders" and config.namespace == "apps"


def test_application_runs_our_job() -> None:
    rendered = _rendered()
    app = rendered.applications["secondary"]
    spec = app["spec"]
    assert spec["type"] == "Python"
    assert spec["mainApplicationFile"] == JOB_MAIN_FILE
    assert spec["arguments"] == [
        "--config",
        f"{CONFIG_MOUNT_PATH}/{next(iter(rendered.config_map['data']))}",
        "--instance",
        "secondary",
    ]
    assert spec["sparkConf"] == SPARK_SETTINGS  # the settings the job's own session applies
    assert spec["sparkConf"]["spark.speculation"] == "false"
    for pod in (spec["driver"], spec["executor"]):
        assert {"name": "jmsbridge-config", "mountPath": CONFIG_MOUNT_PATH, "readOnly": True} in pod[
            "volumeMounts"
        ]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["jmsbridge-config"]["configMap"] == {"name": "orders-config"}
    assert volumes["jmsbridge-checkpoints"]["persistentVolumeClaim"] == {
        "claimName": "orders-bridge-checkpoints"
    }
    assert spec["executor"]["instances"] == 2
    # the bridge's own account (identity.py), for the driver and the executors alike
    assert spec["driver"]["serviceAccount"] == spec["executor"]["serviceAccount"] == "orders-job"


def test_secrets_are_referenced_by_name_only() -> None:
    spec = _rendered().applications["primary"]["spec"]
    credentials = [e for e in spec["driver"]["env"] if e["name"] not in (ENV_OWNER_NAME, ENV_OWNER_UID)]
    env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in credentials}
    assert env == {
        "JMSBRIDGE_JMS_USERNAME": {"name": "amq-credentials", "key": "username"},
        "JMSBRIDGE_JMS_PASSWORD": {"name": "amq-credentials", "key": "password"},
        "JMSBRIDGE_KAFKA_USERNAME": {"name": "bridge-kafka-user", "key": "username"},
        "JMSBRIDGE_KAFKA_PASSWORD": {"name": "bridge-kafka-user", "key": "password"},
        "JMSBRIDGE_BRIDGE_KEY": {"name": "orders-key", "key": "key"},  # the bridge's own (identity.py)
    }
    assert spec["executor"]["env"] == credentials
    assert all("value" not in e for e in credentials)


def _credentials(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in pod["env"] if e["name"] not in (ENV_OWNER_NAME, ENV_OWNER_UID)]


@pytest.mark.parametrize(
    ("nats", "expected"),
    [
        (
            {"credentialsSecretRef": {"name": "nats-user", "usernameKey": "user", "passwordKey": "pass"}},
            {
                "JMSBRIDGE_NATS_USERNAME": {"name": "nats-user", "key": "user"},
                "JMSBRIDGE_NATS_PASSWORD": {"name": "nats-user", "key": "pass"},
            },
        ),
        (
            {"credentialsSecretRef": {"name": "nats-user"}},  # the keys' defaults, as for JMS and Kafka
            {
                "JMSBRIDGE_NATS_USERNAME": {"name": "nats-user", "key": "username"},
                "JMSBRIDGE_NATS_PASSWORD": {"name": "nats-user", "key": "password"},
            },
        ),
        (
            {"tokenSecretRef": {"name": "nats-token", "key": "token"}},
            {"JMSBRIDGE_NATS_TOKEN": {"name": "nats-token", "key": "token"}},
        ),
        (
            {"credsSecretRef": {"name": "nats-creds", "key": "bridge.creds"}},
            {"JMSBRIDGE_NATS_CREDS": {"name": "nats-creds", "key": "bridge.creds"}},
        ),
        ({}, {}),  # a server that asks for nothing: no variable
    ],
)
def test_nats_credentials_are_referenced_by_name_only(
    nats: dict[str, Any], expected: dict[str, dict[str, str]]
) -> None:
    body = bridge(nats={"servers": ["nats://nats.messaging:4222"], **nats})
    for app in _rendered(body).applications.values():
        spec = app["spec"]
        credentials = _credentials(spec["driver"])
        env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in credentials}
        assert {k: v for k, v in env.items() if "_NATS_" in k} == expected
        assert list(env) == [
            "JMSBRIDGE_JMS_USERNAME",
            "JMSBRIDGE_JMS_PASSWORD",
            "JMSBRIDGE_KAFKA_USERNAME",
            "JMSBRIDGE_KAFKA_PASSWORD",
            *expected,
            "JMSBRIDGE_BRIDGE_KEY",
        ]  # JMS's and Kafka's stay, NATS's follow, the bridge's key last
        assert spec["executor"]["env"] == credentials
        assert all("value" not in e for e in credentials)


def test_jms_tls_store_passwords_are_referenced_by_name_only() -> None:
    body = bridge()
    body["spec"]["jms"]["tls"] = {
        "trustStoreFile": "/etc/jms-tls/ca.p12",
        "trustStorePasswordSecretRef": {"name": "jms-ca", "key": "store-password"},
        "keyStoreFile": "/etc/jms-tls/client.p12",
        "keyStorePasswordSecretRef": {"name": "jms-client", "key": "password"},
    }
    for app in _rendered(body).applications.values():
        spec = app["spec"]
        env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in _credentials(spec["driver"])}
        assert env["JMSBRIDGE_JMS_TRUST_STORE_PASSWORD"] == {"name": "jms-ca", "key": "store-password"}
        assert env["JMSBRIDGE_JMS_KEY_STORE_PASSWORD"] == {"name": "jms-client", "key": "password"}
        assert spec["executor"]["env"] == _credentials(spec["driver"])  # the ingress's tasks connect too


def test_the_schema_registrys_credentials_are_referenced_by_name_only() -> None:
    body = bridge()
    registry = {"url": "https://registry:8081", "credentialsSecretRef": {"name": "registry-user"}}
    body["spec"]["kafka"]["schemaRegistry"] = registry
    for app in _rendered(body).applications.values():
        spec = app["spec"]
        env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in _credentials(spec["driver"])}
        assert env["JMSBRIDGE_REGISTRY_USERNAME"] == {"name": "registry-user", "key": "username"}
        assert env["JMSBRIDGE_REGISTRY_PASSWORD"] == {"name": "registry-user", "key": "password"}
        assert spec["executor"]["env"] == _credentials(spec["driver"])  # the tasks register and read too


def test_the_driver_knows_its_bridge_so_that_what_the_job_creates_is_owned_by_it() -> None:
    rendered = _rendered().applications["primary"]
    owner = rendered["metadata"]["ownerReferences"][0]
    env = {e["name"]: e.get("value") for e in rendered["spec"]["driver"]["env"]}
    assert (env[ENV_OWNER_NAME], env[ENV_OWNER_UID]) == (owner["name"], owner["uid"])


def test_labels_owner_and_hash() -> None:
    app = _rendered().applications["primary"]
    meta = app["metadata"]
    assert meta["name"] == "orders-primary" and meta["namespace"] == "apps"
    assert meta["labels"][naming.LABEL_MANAGED_BY] == naming.MANAGER
    assert meta["labels"][naming.LABEL_BRIDGE_INSTANCE] == "primary"
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "jmsbridge.dev/v1alpha1",
            "kind": "JmsBridge",
            "name": "orders",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert len(meta["annotations"][naming.ANNOTATION_SPEC_HASH]) == 64


def test_the_config_file_reads_as_pyyamls_own_text() -> None:
    """The file is written with libyaml's emitter where PyYAML has it: its text must be what PyYAML's
    pure-Python emitter writes, or an operator on another machine would rewrite every ConfigMap."""
    routes = _routes()
    routes[0]["spec"]["match"]["headers"] = {"JMSType": "a: b, 'c'\n  ünï \u2603 " + "x" * 1200}
    routes[1]["spec"]["kafkaTopic"] = "null"  # a word YAML would read as another type unless quoted
    text = next(iter(_rendered(routes=routes).config_map["data"].values()))
    written = yaml.safe_load(text)
    assert text == yaml.safe_dump(written, sort_keys=False, allow_unicode=True, width=1000)
    specs = [r["spec"] for r in written["routes"]]
    assert "null" in {spec.get("kafkaTopic") for spec in specs}
    assert any(spec["match"]["headers"].get("JMSType", "").startswith("a: b") for spec in specs)


def test_rendering_is_deterministic() -> None:
    first = json.dumps(_rendered().objects(), sort_keys=True)
    assert json.dumps(_rendered().objects(), sort_keys=True) == first
    shuffled = list(reversed(_routes()))
    assert json.dumps(_rendered(routes=shuffled).objects(), sort_keys=True) == first


def test_route_changes_touch_the_config_map_only() -> None:
    before = _rendered()
    routes = _routes()
    routes[0]["spec"]["kafkaTopic"] = "orders-v2"
    after = _rendered(routes=routes[:2])
    assert after.config_map["data"] != before.config_map["data"]
    assert after.applications == before.applications


def test_bridge_changes_change_the_application_spec() -> None:
    before = _rendered()
    changed = bridge()
    changed["spec"]["kafka"]["properties"] = {"linger.ms": "5"}
    after = _rendered(changed)
    hash_key = naming.ANNOTATION_SPEC_HASH
    assert (
        after.applications["primary"]["metadata"]["annotations"][hash_key]
        != (before.applications["primary"]["metadata"]["annotations"][hash_key])
    )
    suspended = bridge(suspend=True)
    assert _rendered(suspended).applications == before.applications  # suspend is not part of the spec


def test_checkpoint_without_claim_is_scratch_space_and_uri_mounts_nothing() -> None:
    scratch = bridge()
    scratch["spec"]["spark"]["checkpoint"] = {"path": "/tmp/cp"}
    volumes = {v["name"]: v for v in _rendered(scratch).applications["primary"]["spec"]["volumes"]}
    assert volumes["jmsbridge-checkpoints"] == {"name": "jmsbridge-checkpoints", "emptyDir": {}}
    remote = bridge()
    remote["spec"]["spark"]["checkpoint"] = {"path": "s3a://bucket/cp"}
    names = [v["name"] for v in _rendered(remote).applications["primary"]["spec"]["volumes"]]
    assert names == ["jmsbridge-config", "jmsbridge-tmp"]  # /tmp, with a read-only root filesystem


def test_offline_render_has_no_owner_reference() -> None:
    body = bridge()
    model = JmsBridge.model_validate(body)
    rendered = render(model, job_config(model, []))
    assert "ownerReferences" not in rendered.config_map["metadata"]


@pytest.mark.parametrize(
    "name",
    ["orders", "a" * 60, "orders.eu.west", "1st-bridge", "x" * 253],
)
def test_child_names_are_dns_labels(name: str) -> None:
    import re

    for suffix in ("config", "primary", "secondary"):
        child = naming.child_name(name, suffix)
        assert len(child) <= 63 and re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", child), child
    assert naming.child_name("orders.eu", "primary") != naming.child_name("orders-eu", "primary")
    assert len(naming.label_value(name)) <= 63


def test_applications_validate_against_the_spark_operator_crd() -> None:
    crd = spark_crd_file()  # from the spark-operator's models; the upstream file: the cross-check below
    for body in (bridge(), bridge(failover={"standby": False}, spark={})):
        for app in _rendered(body).applications.values():
            assert schema_errors(crd, app, "v1beta2") == []


# ---------------------------------------------------------------------------------------------------
# JMS client jars, Kafka TLS material and the bridge's own pod settings


def _customised() -> dict[str, Any]:
    """The example bridge with provider jars from an image, a Kafka truststore and keystore from Secrets."""
    body = bridge()
    body["spec"]["jms"]["clientLibraries"] = [
        {"image": "registry.example/ibm-mq-client:9.4", "path": "/opt/mqm/java/lib/"},
        {"image": "registry.example/extra-jars:1", "imagePullPolicy": "Always"},
    ]
    body["spec"]["kafka"]["properties"] = {
        "ssl.ca.location": "/etc/kafka-tls/ca.crt",
        "ssl.keystore.location": "/etc/kafka-keystore/user.p12",
    }
    body["spec"]["spark"]["sparkConf"] = {
        "spark.executor.extraJavaOptions": "-Djavax.net.debug=ssl",
        "spark.ui.port": "4041",
    }
    body["spec"]["spark"]["pod"] = {
        "imagePullSecrets": ["registry-credentials"],
        "nodeSelector": {"kubernetes.io/arch": "amd64"},
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "bridges", "effect": "NoSchedule"}
        ],
        "env": [
            {"name": "TZ", "value": "UTC"},
            {"name": "MQ_CHANNEL", "valueFrom": {"configMapKeyRef": {"name": "mq", "key": "channel"}}},
        ],
        "volumes": [
            {
                "name": "kafka-tls",
                "secret": {
                    "secretName": "kafka-cluster-ca-cert",
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                },
            },
            {"name": "kafka-keystore", "secret": {"secretName": "bridge-kafka-user"}},
        ],
        "volumeMounts": [
            {"name": "kafka-tls", "mountPath": "/etc/kafka-tls", "readOnly": True},
            {"name": "kafka-keystore", "mountPath": "/etc/kafka-keystore", "readOnly": True},
        ],
    }
    return body


def test_client_libraries_are_copied_onto_the_jobs_jms_classpath() -> None:
    spec = _rendered(_customised()).applications["primary"]["spec"]
    assert (f"{JMS_LIBRARY_DIR}/*.jar",) == DEFAULT_CLASSPATH  # where the job looks without jms.classpath
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["jmsbridge-jms-lib"] == {"name": "jmsbridge-jms-lib", "emptyDir": {}}
    for pod in (spec["driver"], spec["executor"]):
        assert [(c["image"], c["command"], c["imagePullPolicy"]) for c in pod["initContainers"]] == [
            (
                "registry.example/ibm-mq-client:9.4",
                ["cp", "-R", "/opt/mqm/java/lib/.", f"{JMS_LIBRARY_DIR}/"],
                "IfNotPresent",
            ),
            ("registry.example/extra-jars:1", ["cp", "-R", "/jars/.", f"{JMS_LIBRARY_DIR}/"], "Always"),
        ]
        for container in pod["initContainers"]:
            assert container["volumeMounts"] == [{"name": "jmsbridge-jms-lib", "mountPath": JMS_LIBRARY_DIR}]
        assert {"name": "jmsbridge-jms-lib", "mountPath": JMS_LIBRARY_DIR, "readOnly": True} in pod[
            "volumeMounts"
        ]


def test_kafka_tls_files_come_from_secrets_mounted_where_the_properties_point() -> None:
    rendered = _rendered(_customised())
    (text,) = rendered.config_map["data"].values()
    config = JobConfig.model_validate(yaml.safe_load(text))
    spec = rendered.applications["secondary"]["spec"]
    secrets = {v["name"]: v["secret"]["secretName"] for v in spec["volumes"] if "secret" in v}
    for pod in (spec["driver"], spec["executor"]):
        mounted = {m["mountPath"]: secrets.get(m["name"]) for m in pod["volumeMounts"]}
        for key in ("ssl.ca.location", "ssl.keystore.location"):
            path = config.bridge.kafka.properties[key]
            directory = path.rsplit("/", 1)[0]
            assert mounted.get(directory) in ("kafka-cluster-ca-cert", "bridge-kafka-user"), (key, mounted)


def test_pod_settings_and_spark_conf_are_added_to_the_operators() -> None:
    spec = _rendered(_customised()).applications["primary"]["spec"]
    assert spec["imagePullSecrets"] == ["registry-credentials"]
    for pod in (spec["driver"], spec["executor"]):
        assert pod["nodeSelector"] == {"kubernetes.io/arch": "amd64"}
        assert pod["tolerations"][0]["key"] == "dedicated"
        names = [e["name"] for e in pod["env"] if e["name"] not in (ENV_OWNER_NAME, ENV_OWNER_UID)]
        assert names[:4] == [
            "JMSBRIDGE_JMS_USERNAME",
            "JMSBRIDGE_JMS_PASSWORD",
            "JMSBRIDGE_KAFKA_USERNAME",
            "JMSBRIDGE_KAFKA_PASSWORD",
        ]  # the credentials stay, the bridge's env follows
        assert names[4:] == ["JMSBRIDGE_BRIDGE_KEY", "TZ", "MQ_CHANNEL"]
        assert pod["volumeMounts"][0]["mountPath"] == CONFIG_MOUNT_PATH
    conf = spec["sparkConf"]
    assert conf["spark.ui.port"] == "4041"
    assert conf["spark.executor.extraJavaOptions"] == (
        f"{SPARK_SETTINGS['spark.executor.extraJavaOptions']} -Djavax.net.debug=ssl"
    )  # appended, the job's JIT setting kept
    assert conf["spark.driver.extraJavaOptions"] == SPARK_SETTINGS["spark.driver.extraJavaOptions"]
    assert {k: conf[k] for k in SPARK_SETTINGS if "extraJavaOptions" not in k} == {
        k: v for k, v in SPARK_SETTINGS.items() if "extraJavaOptions" not in k
    }


def test_customised_applications_validate_against_the_spark_operator_crd() -> None:
    crd = spark_crd_file()
    for app in _rendered(_customised()).applications.values():
        assert schema_errors(crd, app, "v1beta2") == []


def test_the_provider_jars_and_tls_example_renders_valid_applications() -> None:
    crd = spark_crd_file()
    (body,) = load_yaml(EXAMPLES.parent / "provider-jars-and-tls" / "bridge.yaml")
    rendered = _rendered(body, [])
    for app in rendered.applications.values():
        assert schema_errors(crd, app, "v1beta2") == []
        assert [c["image"] for c in app["spec"]["driver"]["initContainers"]] == [
            "registry.example.com/jms-clients/ibm-mq:9.4.1"
        ]


def _nats_example() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    documents = load_yaml(EXAMPLES.parent / "nats" / "bridge.yaml")
    (body,) = [d for d in documents if d["kind"] == "JmsBridge"]
    return body, [d for d in documents if d["kind"] == "JmsBridgeRoute"]


def test_the_nats_example_renders_valid_applications_and_its_routes_into_the_config() -> None:
    crd = spark_crd_file()
    body, routes = _nats_example()
    rendered = _rendered(body, routes)
    (text,) = rendered.config_map["data"].values()
    config = JobConfig.model_validate(yaml.safe_load(text))
    assert config.bridge.nats is not None and config.bridge.nats.servers == ["nats://127.0.0.1:4222"]
    assert {r.name: (r.spec.direction.value, r.spec.nats_subject) for r in config.routes} == {
        "orders-requests": ("natsToJms", "svc.orders.>"),
        "events": ("natsToJms", "events.>"),
        "audit-to-nats": ("jmsToNats", "orders.audit"),
    }
    for app in rendered.applications.values():
        assert schema_errors(crd, app, "v1beta2") == []
        # a local example: no credentials to reference, only the signing key of the bridges' namespace
        assert [e["name"] for e in app["spec"]["executor"]["env"]] == ["JMSBRIDGE_BRIDGE_KEY"]


def test_applications_validate_against_the_upstream_crd_file() -> None:
    """The cross-check: every rendering above against the spark-operator's own CRD file (shared/ref),
    which also holds its enums. Fails in CI without the file; skips, alone, in a clone without it."""
    crd = require_reference(SPARK_CRD)
    (provider_example,) = load_yaml(EXAMPLES.parent / "provider-jars-and-tls" / "bridge.yaml")
    renderings: list[tuple[dict[str, Any], list[dict[str, Any]] | None]] = [
        (bridge(), None),
        (bridge(failover={"standby": False}, spark={}), None),
        (_customised(), None),
        (provider_example, []),
        _nats_example(),
    ]
    for body, routes in renderings:
        for app in _rendered(body, routes).applications.values():
            assert schema_errors(crd, app, "v1beta2") == [], app["metadata"]["name"]


def test_the_init_containers_put_the_jars_where_the_jobs_default_classpath_finds_them(tmp_path: Path) -> None:
    """Each rendered init container's command, run with real `cp` in a directory standing for `/`: the
    library images' jars (from two images) end up where the job's default JMS classpath looks."""
    root = tmp_path / "pod"
    (root / "opt/mqm/java/lib").mkdir(parents=True)
    (root / "opt/mqm/java/lib/com.ibm.mq.allclient.jar").write_bytes(b"jar")
    (root / "opt/mqm/java/lib/licenses").mkdir()
    (root / "jars").mkdir()
    (root / "jars/extra.jar").write_bytes(b"jar")
    (root / JMS_LIBRARY_DIR.lstrip("/")).mkdir(parents=True)  # the emptyDir
    spec = _rendered(_customised()).applications["primary"]["spec"]
    for container in spec["driver"]["initContainers"]:
        command = [arg if not arg.startswith("/") else str(root) + arg for arg in container["command"]]
        subprocess.run(command, check=True)
    found = expand_classpath([str(root) + entry for entry in DEFAULT_CLASSPATH])
    assert sorted(Path(p).name for p in found) == ["com.ibm.mq.allclient.jar", "extra.jar"]
