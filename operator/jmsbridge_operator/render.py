"""Rendering: a bridge and its routes become a ConfigMap and one SparkApplication per instance.

- The ConfigMap holds the rendered `JobConfig` (YAML), one file per bridge spec an instance runs, named by
  the hash of that spec (`config_key`); it is mounted into the driver and the executors at
  `CONFIG_MOUNT_PATH`. Routes live only here: the job re-reads its file, so a route change never touches a
  SparkApplication (the spark-operator kills and resubmits an application on ANY spec change). Which
  files beside the new one an instance still reads during a rollout: `config_files.py`.
- The SparkApplication of each instance runs our PySpark job (`--config <its file> --instance <name>`). A
  change of the bridge's own spec does restart it: the file's name and the hash of the bridge's part of
  the config (a driver annotation) are part of the spec.
- The driver and the executors run as `spark.serviceAccount` (one of the platform team's allow-list,
  policy.py), else as the bridge's own service account, which the operator creates with what the job
  needs and no more (identity.py).
- The job image is the bridge's `spark.image`, else the operator's (`job_image`: this release's, or
  `JMSBRIDGE_JOB_IMAGE`), decided here and not by a CRD default: the stored bridge keeps no image it did
  not ask for, so a new operator moves it to its job image, through the rollout of any spec change.
- Secrets are only referenced: credentials reach the job as environment variables (the `ENV_*` names of
  the config module) through `secretKeyRef`, never as values. The digest of the versions of the Secrets
  the pods read (`secret_names`) is a driver annotation, so a rotated Secret restarts the instances
  (`secret_versions.py`).
- `jms.clientLibraries`: one init container per image copies its jars into an emptyDir mounted at
  `JMS_LIBRARY_DIR` (the job's default JMS classpath) in every driver and executor pod.
- Every driver and executor pod, and each of its containers, meets the Pod Security Standard
  `restricted` (`pod_security.py`) unless `spark.pod.securityContext` or `containerSecurityContext`
  replace a default. Their root filesystems are read-only: /tmp is an emptyDir (`TMP_VOLUME`).
- `spark.pod` (volumes, mounts, env, nodeSelector, tolerations, imagePullSecrets) is added to what the
  operator sets, on the driver and the executors alike; `spark.sparkConf` is merged with the job's
  settings (`spark_settings.merged_settings`). The models reject names and keys that are the operator's.
- The SparkApplication passes through the spark-operator's own models (`spark_application.checked`):
  a field they do not know, a wrong type or an unknown enum value is an error here, not an object the
  API server would prune or refuse.
- Each object carries `jmsbridge.dev/spec-hash` (SparkApplication) or `jmsbridge.dev/config-hash`
  (ConfigMap), the hash of what we rendered; the reconciler writes an object only when its hash changes.

Everything is deterministic (same input, same bytes): rendering is a pure function, shared by the
operator and by `jmsbridge render`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import yaml

from bridge_job.config import (
    BRIDGE_KIND,
    CONFIG_MOUNT_PATH,
    DEFAULT_JOB_IMAGE,
    ENV_JMS_KEY_STORE_PASSWORD,
    ENV_JMS_PASSWORD,
    ENV_JMS_TRUST_STORE_PASSWORD,
    ENV_JMS_USERNAME,
    ENV_KAFKA_PASSWORD,
    ENV_KAFKA_USERNAME,
    ENV_NATS_CREDS,
    ENV_NATS_PASSWORD,
    ENV_NATS_TOKEN,
    ENV_NATS_USERNAME,
    ENV_OWNER_NAME,
    ENV_OWNER_UID,
    ENV_REGISTRY_PASSWORD,
    ENV_REGISTRY_USERNAME,
    JMS_LIBRARY_DIR,
    JOB_MAIN_FILE,
    JmsBridge,
    JobConfig,
    SecretKeyRef,
    SecretRef,
)
from bridge_job.config.spark_settings import merged_settings
from bridge_job.contract import KEY_ENV
from jmsbridge_operator import naming, spark_application
from jmsbridge_operator.pod_security import container_security_context, pod_security_context

CONFIG_VOLUME = "jmsbridge-config"
CHECKPOINT_VOLUME = "jmsbridge-checkpoints"
# /tmp of the driver and the executors, where the root filesystem is read-only (pod_security.py).
TMP_VOLUME = "jmsbridge-tmp"
TMP_PATH = "/tmp"
JMS_LIBRARY_VOLUME = "jmsbridge-jms-lib"
COMPONENT_JOB = "bridge-job"
COMPONENT_CONFIG = "config"

# Restart a streaming bridge whatever made it stop; back off a little between attempts.
RESTART_POLICY = {"type": "Always", "onFailureRetryInterval": 10, "onSubmissionFailureRetryInterval": 20}


def digest(value: Any) -> str:
    """A stable hash of JSON-like data (key order does not matter)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def instances(config: JobConfig) -> list[str]:
    """The bridge's instances: a primary, plus a secondary when a standby is asked for."""
    return [naming.PRIMARY, naming.SECONDARY] if config.bridge.failover.standby else [naming.PRIMARY]


def owner_reference(bridge: JmsBridge) -> dict[str, Any] | None:
    """The bridge as controller owner; None offline, where the bridge has no uid yet."""
    uid = (bridge.metadata.model_extra or {}).get("uid")
    if not uid:
        return None
    return {
        "apiVersion": naming.BRIDGE_API_VERSION,
        "kind": BRIDGE_KIND,
        "name": bridge.metadata.name,
        "uid": str(uid),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def owner_env(bridge: JmsBridge) -> list[dict[str, Any]]:
    """The bridge's name and uid for the job (`bridge_job.kube.ownership`); none offline (no uid yet)."""
    if (owner := owner_reference(bridge)) is None:
        return []
    return [{"name": ENV_OWNER_NAME, "value": owner["name"]}, {"name": ENV_OWNER_UID, "value": owner["uid"]}]


def _metadata(
    bridge: JmsBridge, name: str, labels: dict[str, str], annotations: dict[str, str]
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if bridge.metadata.namespace:
        metadata["namespace"] = bridge.metadata.namespace
    metadata["labels"] = labels
    metadata["annotations"] = {naming.ANNOTATION_BRIDGE: bridge.metadata.name, **annotations}
    if (owner := owner_reference(bridge)) is not None:
        metadata["ownerReferences"] = [owner]
    return metadata


# ---------------------------------------------------------------------------------------------------
# ConfigMap


# libyaml's emitter when PyYAML has it: the same text, about 7 times faster (a bridge's reconciliation
# spent most of its time writing its config file in pure Python).
_DUMPER: type[Any] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # CSafeDumper is no SafeDumper subclass


def config_text(config: JobConfig) -> str:
    return yaml.dump(config.dump(), Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=1000)


def bridge_config_hash(config: JobConfig) -> str:
    """The hash of what needs a restart to take effect: the bridge's spec (routes and suspend excluded)."""
    running = config.model_copy(
        update={"routes": [], "bridge": config.bridge.model_copy(update={"suspend": False})}
    )
    return digest(running.dump())


def config_key(config: JobConfig) -> str:
    """The file of the config in the ConfigMap: named by the bridge's spec, so that a new spec is a new
    file and the instances still running the previous one keep reading theirs (`config_files.py`)."""
    return f"job-{bridge_config_hash(config)[:12]}.yaml"


def config_map(bridge: JmsBridge, config: JobConfig, kept: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ConfigMap with the config's file, and the `kept` files instances still read."""
    data = {**(kept or {}), config_key(config): config_text(config)}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(
            bridge,
            naming.config_map_name(bridge.metadata.name),
            naming.child_labels(bridge.metadata.name, COMPONENT_CONFIG),
            {naming.ANNOTATION_CONFIG_HASH: digest(data)},
        ),
        "data": data,
    }


# ---------------------------------------------------------------------------------------------------
# SparkApplication


def _secret_env(ref: SecretRef, username_env: str, password_env: str) -> list[dict[str, Any]]:
    return [
        {"name": username_env, "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.username_key}}},
        {"name": password_env, "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.password_key}}},
    ]


def _secret_key_env(ref: SecretKeyRef, env_name: str) -> dict[str, Any]:
    return {"name": env_name, "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}}}


def credentials_env(bridge_name: str, config: JobConfig) -> list[dict[str, Any]]:
    """Credentials as references to their Secrets; the values never pass through the operator."""
    env: list[dict[str, Any]] = []
    if (jms_ref := config.bridge.jms.credentials_secret_ref) is not None:
        env += _secret_env(jms_ref, ENV_JMS_USERNAME, ENV_JMS_PASSWORD)
    if (jms_tls := config.bridge.jms.tls) is not None:
        if jms_tls.trust_store_password_secret_ref is not None:
            env.append(_secret_key_env(jms_tls.trust_store_password_secret_ref, ENV_JMS_TRUST_STORE_PASSWORD))
        if jms_tls.key_store_password_secret_ref is not None:
            env.append(_secret_key_env(jms_tls.key_store_password_secret_ref, ENV_JMS_KEY_STORE_PASSWORD))
    if (sasl := config.bridge.kafka.sasl) is not None:
        env += _secret_env(sasl.credentials_secret_ref, ENV_KAFKA_USERNAME, ENV_KAFKA_PASSWORD)
    registry = config.bridge.kafka.schema_registry
    if registry is not None and registry.credentials_secret_ref is not None:
        env += _secret_env(registry.credentials_secret_ref, ENV_REGISTRY_USERNAME, ENV_REGISTRY_PASSWORD)
    if (nats := config.bridge.nats) is not None:
        if nats.credentials_secret_ref is not None:
            env += _secret_env(nats.credentials_secret_ref, ENV_NATS_USERNAME, ENV_NATS_PASSWORD)
        if nats.token_secret_ref is not None:
            env.append(_secret_key_env(nats.token_secret_ref, ENV_NATS_TOKEN))
        if nats.creds_secret_ref is not None:
            env.append(_secret_key_env(nats.creds_secret_ref, ENV_NATS_CREDS))
    # Not a credential, but as secret: the key that signs what only the bridge may write (signing.py), the
    # bridge's own (identity.py).
    key = SecretKeyRef(name=naming.bridge_key_secret(bridge_name), key=naming.BRIDGE_KEY_SECRET_KEY)
    return [*env, _secret_key_env(key, KEY_ENV)]


def _checkpoint_volume(config: JobConfig) -> dict[str, Any] | None:
    checkpoint = config.bridge.spark.checkpoint
    if checkpoint.persistent_volume_claim:
        return {
            "name": CHECKPOINT_VOLUME,
            "persistentVolumeClaim": {"claimName": checkpoint.persistent_volume_claim},
        }
    if checkpoint.path.startswith("/"):
        # A local path without a claim: scratch space that lives as long as the pod (documented).
        return {"name": CHECKPOINT_VOLUME, "emptyDir": {}}
    return None  # a URI (s3a://, hdfs://...): nothing to mount


def spark_conf(config: JobConfig) -> dict[str, str]:
    return merged_settings(config.bridge.spark.spark_conf or {})


def library_init_containers(config: JobConfig) -> list[dict[str, Any]]:
    """One init container per client library image: its jars copied into the shared library volume."""
    mount = {"name": JMS_LIBRARY_VOLUME, "mountPath": JMS_LIBRARY_DIR}
    pod = config.bridge.spark.pod
    return [
        {
            "name": f"jms-client-library-{index}",
            "image": library.image,
            "imagePullPolicy": library.image_pull_policy,
            "command": ["cp", "-R", f"{library.path.rstrip('/')}/.", f"{JMS_LIBRARY_DIR}/"],
            "volumeMounts": [mount],
            "securityContext": container_security_context(pod.container_security_context if pod else None),
        }
        for index, library in enumerate(config.bridge.jms.client_libraries or [])
    ]


def _pods_share(bridge: JmsBridge, config: JobConfig) -> dict[str, Any]:
    """What the driver and the executors get alike, beyond their resources: env, mounts, placement."""
    spark = config.bridge.spark
    pod = spark.pod
    env = credentials_env(bridge.metadata.name, config) + [e.dump() for e in (pod.env if pod else [])]
    mounts: list[dict[str, Any]] = [{"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH, "readOnly": True}]
    if not _mounts_tmp(config):  # before any mount under it (a scratch checkpoint in /tmp/...)
        mounts.append({"name": TMP_VOLUME, "mountPath": TMP_PATH})
    if _checkpoint_volume(config) is not None:
        mounts.append({"name": CHECKPOINT_VOLUME, "mountPath": spark.checkpoint.path})
    if init := library_init_containers(config):
        mounts.append({"name": JMS_LIBRARY_VOLUME, "mountPath": JMS_LIBRARY_DIR, "readOnly": True})
    mounts += [m.dump() for m in (pod.volume_mounts if pod else [])]
    shared: dict[str, Any] = {"env": env} if env else {}
    shared["volumeMounts"] = mounts
    if init:
        shared["initContainers"] = init
    if pod and pod.node_selector:
        shared["nodeSelector"] = dict(pod.node_selector)
    if pod and pod.tolerations:
        shared["tolerations"] = [t.dump() for t in pod.tolerations]
    shared["podSecurityContext"] = pod_security_context(pod.security_context if pod else None)
    shared["securityContext"] = container_security_context(pod.container_security_context if pod else None)
    return shared


def _mounts_tmp(config: JobConfig) -> bool:
    """Whether `spark.pod` mounts a volume of its own at /tmp (then no emptyDir of ours there)."""
    pod = config.bridge.spark.pod
    return any(m.mount_path.rstrip("/") == TMP_PATH for m in (pod.volume_mounts if pod else []))


def _volumes(bridge: JmsBridge, config: JobConfig) -> list[dict[str, Any]]:
    volumes: list[dict[str, Any]] = [
        {"name": CONFIG_VOLUME, "configMap": {"name": naming.config_map_name(bridge.metadata.name)}}
    ]
    if (checkpoint := _checkpoint_volume(config)) is not None:
        volumes.append(checkpoint)
    if config.bridge.jms.client_libraries:
        volumes.append({"name": JMS_LIBRARY_VOLUME, "emptyDir": {}})
    if not _mounts_tmp(config):
        volumes.append({"name": TMP_VOLUME, "emptyDir": {}})
    if (pod := config.bridge.spark.pod) is not None:
        volumes += [v.model_dump(mode="json", by_alias=True) for v in pod.volumes]
    return volumes


def secret_names(bridge: JmsBridge, config: JobConfig) -> tuple[str, ...]:
    """The Secrets the bridge's pods read when they start: their environment's `secretKeyRef`s and their
    Secret volumes (projected ones included). Not `imagePullSecrets`: a pull reads them, the job not."""
    names = {
        ref["name"]
        for env in _pods_share(bridge, config).get("env", [])
        if (ref := ((env.get("valueFrom") or {}).get("secretKeyRef") or {})).get("name")
    }
    for volume in _volumes(bridge, config):
        if name := (volume.get("secret") or {}).get("secretName"):
            names.add(name)
        for source in (volume.get("projected") or {}).get("sources") or []:
            if name := (source.get("secret") or {}).get("name"):
                names.add(name)
    return tuple(sorted(names))


def secrets_version(versions: Mapping[str, str]) -> str:
    """The digest of the Secrets' versions (`secret_versions.version_of`), as the driver carries it."""
    return digest(dict(versions))[:16]


def application(
    bridge: JmsBridge,
    config: JobConfig,
    instance: str,
    job_image: str = DEFAULT_JOB_IMAGE,
    secrets: str | None = None,
) -> dict[str, Any]:
    """One instance's SparkApplication; `job_image` is what runs when the bridge names no image;
    `secrets` is the digest of its Secrets' versions (`secrets_version`), None where none is known."""
    spark = config.bridge.spark
    name = naming.application_name(bridge.metadata.name, instance)
    labels = naming.child_labels(bridge.metadata.name, COMPONENT_JOB, instance)
    shared = _pods_share(bridge, config)

    def pod(resources: Any) -> dict[str, Any]:
        return {"cores": resources.cores, "memory": resources.memory, "labels": labels, **shared}

    driver = pod(spark.driver)
    if owner := owner_env(bridge):  # what the job creates (its Lease, its health report) is the bridge's
        driver["env"] = [*driver.get("env", []), *owner]
    driver["annotations"] = {naming.ANNOTATION_BRIDGE_CONFIG_HASH: bridge_config_hash(config)}
    if secrets is not None:
        driver["annotations"][naming.ANNOTATION_SECRETS_VERSION] = secrets
    # The driver creates its executors and, with a standby, takes part in the election over a Lease; the
    # executors sign and check marks with the bridge's key, and need no rights of their own but the same.
    account = spark.service_account or naming.job_service_account(bridge.metadata.name)
    driver["serviceAccount"] = account
    if config.bridge.telemetry.port > 0:
        driver["ports"] = [
            {"name": "metrics", "containerPort": config.bridge.telemetry.port, "protocol": "TCP"}
        ]
    executor = pod(spark.executor)
    executor["instances"] = spark.executor.instances
    executor["serviceAccount"] = account

    spec: dict[str, Any] = {
        "type": "Python",
        "pythonVersion": "3",
        "mode": "cluster",
        "image": spark.image or job_image,
        "imagePullPolicy": "IfNotPresent",
        "mainApplicationFile": JOB_MAIN_FILE,
        "arguments": ["--config", f"{CONFIG_MOUNT_PATH}/{config_key(config)}", "--instance", instance],
        "sparkVersion": spark.spark_version,
        "restartPolicy": dict(RESTART_POLICY),
        "sparkConf": spark_conf(config),
        "volumes": _volumes(bridge, config),
        "driver": driver,
        "executor": executor,
    }
    if spark.pod is not None and spark.pod.image_pull_secrets:
        spec["imagePullSecrets"] = list(spark.pod.image_pull_secrets)
    body = {
        "apiVersion": naming.SPARK_API_VERSION,
        "kind": naming.SPARK_KIND,
        "metadata": _metadata(bridge, name, labels, {naming.ANNOTATION_SPEC_HASH: digest(spec)}),
        "spec": spec,
    }
    return spark_application.checked(body)  # a copy: no shared sub-objects, callers may change theirs


# ---------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Rendered:
    config_map: dict[str, Any]
    applications: dict[str, dict[str, Any]]  # instance -> SparkApplication

    def objects(self) -> list[dict[str, Any]]:
        return [self.config_map, *self.applications.values()]


def render(
    bridge: JmsBridge,
    config: JobConfig,
    job_image: str = DEFAULT_JOB_IMAGE,
    secrets: Mapping[str, str] | None = None,
    kept: Mapping[str, str] | None = None,
) -> Rendered:
    """Every object the operator creates for a running bridge (`config` holds its accepted routes);
    `secrets`: each instance's digest of its Secrets' versions, where known; `kept`: the config files of
    previous specs that instances still read (`config_files.py`)."""
    return Rendered(
        config_map=config_map(bridge, config, kept),
        applications={
            instance: application(bridge, config, instance, job_image, (secrets or {}).get(instance))
            for instance in instances(config)
        },
    )


def secrets_version_of(application: Mapping[str, Any]) -> str | None:
    """The digest of its Secrets' versions a SparkApplication carries (None: none)."""
    driver = (application.get("spec") or {}).get("driver") or {}
    value = (driver.get("annotations") or {}).get(naming.ANNOTATION_SECRETS_VERSION)
    return str(value) if value is not None else None


def spec_hash_of(obj: dict[str, Any]) -> str | None:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(naming.ANNOTATION_SPEC_HASH)


def config_hash_of(obj: dict[str, Any]) -> str | None:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(naming.ANNOTATION_CONFIG_HASH)
