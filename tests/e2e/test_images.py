"""The images' entry commands run from their Python environments, built as their Dockerfiles build them:
a clean venv with exactly the packages of the image's requirements file, installed from the repository
as the Dockerfile COPYs it (tests/support/images.py; cached in .venv-cache/ between runs).

- The job image: the entry file every SparkApplication names, under that venv's spark-submit, with the
  config and arguments the operator renders for a standby pair in a namespace, on real brokers and the
  Kubernetes real API server: it moves messages and takes the Lease and writes the health ConfigMap. It runs
  with a read-only root filesystem, as the rendered pods do (`read_only_root`).
- The operator image: its ENTRYPOINT and CMD, against a real API server: it reconciles a bridge.

What stays different from the images: the base image's Python (here this machine's, the same minor
version) and Spark (here the pyspark of the venv, the same version: tests/test_images.py); pip reads this
machine's download cache, where the Dockerfile downloads.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bridge_job.config import (
    CONFIG_MOUNT_PATH,
    JmsBridge,
    JmsBridgeRoute,
    default_bridge_id,
    health_config_map_name,
    job_config,
    lease_holder_identity,
    lease_name,
)
from bridge_job.jms.settings import DEFAULT_CLASSPATH
from bridge_job.message import Destination, DestinationKind, JmsMessage
from jmsbridge.local import ACTIVEMQ_HOME, BridgeJob, stop_group
from testbed.apiserver.chart import ALL_NAMESPACES, install_identity, job_kubeconfig
from testbed.apiserver.client import KubeApi
from testbed.brokers import ActiveMqBroker, KafkaBroker
from testbed.harness import bridge_document, read_topics, route_document, send
from testbed.resources import NAMESPACE
from tests.support.images import (
    JOB_DOCKERFILE,
    OPERATOR_DOCKERFILE,
    Image,
    ImageVenv,
    assemble,
    image_path,
    image_venv,
    read_only_root,
)
from tests.test_images import ACTIVEMQ_CLIENT_JARS

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="session")
def job_venv(tmp_path_factory: pytest.TempPathFactory) -> ImageVenv:
    return image_venv(Image.parse(JOB_DOCKERFILE), tmp_path_factory.mktemp("job-venv"))


@pytest.fixture(scope="session")
def operator_venv(tmp_path_factory: pytest.TempPathFactory) -> ImageVenv:
    return image_venv(Image.parse(OPERATOR_DOCKERFILE), tmp_path_factory.mktemp("operator-venv"))


@dataclass
class SubmittedJob(BridgeJob):
    """The entry file under spark-submit, as a process group (BridgeJob's waits and stops)."""

    argv: list[str] = field(default_factory=list)
    cwd: Path | None = None  # the image's WORKDIR; else the work dir

    def start(self) -> SubmittedJob:
        log_path = self.work_dir / f"driver-{len(self.logs)}.log"
        self.logs.append(log_path)
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=self.env,
                cwd=self.cwd or self.work_dir,
            )  # fmt: skip
        return self


def rendered_application(bridge: dict[str, Any], route: dict[str, Any]) -> tuple[dict[str, Any], str, str]:
    """The primary SparkApplication the operator renders, and the job config file its ConfigMap holds
    (name and text)."""
    from jmsbridge_operator.render import render

    model = JmsBridge.model_validate(bridge)
    rendered = render(model, job_config(model, [JmsBridgeRoute.model_validate(route)]))
    ((config_file, config_text),) = rendered.config_map["data"].items()
    return rendered.applications["primary"], config_file, config_text


def held(lease: dict[str, Any] | None) -> str | None:
    holder: str | None = (lease or {}).get("spec", {}).get("holderIdentity")
    return holder


def reported(config_map: dict[str, Any] | None) -> str | None:
    """The primary instance's document in the health ConfigMap, once it has said how JMS is."""
    document: str | None = ((config_map or {}).get("data") or {}).get("primary")
    return document if document and '"jms"' in document else None


def imported_from(venv: ImageVenv, cwd: Path, *modules: str) -> list[Path]:
    """Where the venv's Python finds `modules` (run where no checkout is on its path)."""
    code = f"import importlib; print(*(importlib.import_module(m).__file__ for m in {modules!r}))"
    done = subprocess.run(
        [venv.bin("python"), "-c", code], env=venv.env(), cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return [Path(p) for p in done.stdout.split()]


def test_the_job_image_runs_its_entry_file_from_a_clean_venv(
    job_venv: ImageVenv,
    cluster: KubeApi,
    activemq: ActiveMqBroker,
    kafka: KafkaBroker,
    tmp_path: Path,
) -> None:
    n = uuid.uuid4().hex[:8]
    name, queue, topic = f"image-{n}", f"orders.{n}", f"orders-{n}"
    bridge_id = default_bridge_id(NAMESPACE, name)  # its Lease's and health report's names
    kafka.create_topics(topic)
    bridge = bridge_document(name, activemq, kafka, [{"queue": queue}])
    del bridge["spec"]["jms"]["classpath"]  # the image's default: /opt/jmsbridge/jms-lib/*.jar
    bridge["metadata"] |= {"namespace": NAMESPACE, "uid": "uid-1"}
    bridge["spec"]["failover"] = {"standby": True}  # the Lease, beside the health ConfigMap
    bridge["spec"]["spark"]["checkpoint"] = {"path": str(tmp_path / "checkpoints")}  # a shared volume there
    route = route_document("all", name, topic)
    route["metadata"]["namespace"] = NAMESPACE
    application, config_file, config_text = rendered_application(bridge, route)

    image = Image.parse(JOB_DOCKERFILE)
    root = assemble(image, tmp_path / "image")

    def inside(path: str) -> Path:
        return root / path.lstrip("/")

    # The image's RUN mkdir, filled as spec.jms.clientLibraries or a derived image fills it.
    jms_lib = inside(str(Path(DEFAULT_CLASSPATH[0]).parent))
    jms_lib.mkdir(parents=True)
    for jar in ACTIVEMQ_CLIENT_JARS:
        (jms_lib / jar).symlink_to(ACTIVEMQ_HOME / "lib" / jar)
    # The ConfigMap, mounted where the driver's volumeMount puts it.
    inside(CONFIG_MOUNT_PATH).mkdir(parents=True)
    (inside(CONFIG_MOUNT_PATH) / config_file).write_text(config_text)
    spec = application["spec"]
    assert CONFIG_MOUNT_PATH in {m["mountPath"] for m in spec["driver"]["volumeMounts"]}

    # The job's code and its Lease's client come from the venv, nothing from this checkout or test run.
    for module in imported_from(job_venv, tmp_path, "bridge_job", "jmsbridge", "kubernetes", "pyspark"):
        assert module.is_relative_to(job_venv.root), module

    env = job_venv.env(
        PYSPARK_PYTHON=str(job_venv.bin("python")),  # the image's ENV
        PYSPARK_DRIVER_PYTHON=str(job_venv.bin("python")),
        JMSBRIDGE_CLASSPATH=str(jms_lib / "*.jar"),  # DEFAULT_CLASSPATH, re-rooted
        HOSTNAME=f"{name}-driver",  # the pod's name: the Lease holder
        KUBECONFIG=str(job_kubeconfig(cluster, NAMESPACE, bridge=name)),  # as the bridge's own pods
    )
    argv = [str(job_venv.bin("spark-submit")), "--master", "local[2]", "--conf", "spark.ui.enabled=false"]
    argv += [arg for key, value in spec["sparkConf"].items() for arg in ("--conf", f"{key}={value}")]
    argv.append(str(inside(image_path(spec["mainApplicationFile"]))))
    argv += [str(inside(arg)) if arg.startswith("/") else arg for arg in spec["arguments"]]
    # As the pod runs it (pod_security.py): the root filesystem read-only, /tmp an emptyDir, the
    # checkpoints on their volume (here under tmp_path), in the image's WORKDIR.
    assert spec["driver"]["securityContext"]["readOnlyRootFilesystem"] is True
    assert "/tmp" in {m["mountPath"] for m in spec["driver"]["volumeMounts"]}
    workdir = inside(image.values("WORKDIR")[-1][0])
    workdir.mkdir(parents=True, exist_ok=True)
    argv = read_only_root(argv, [root, job_venv.root])
    job = SubmittedJob([], tmp_path, env=env, argv=argv, cwd=workdir).start()
    try:
        job.wait_running(timeout=180)
        sent = send(
            activemq, [JmsMessage(Destination(DestinationKind.QUEUE, queue), body=f"m{i}") for i in range(5)]
        )
        records = read_topics(kafka, [topic], len(sent), settle=1.0)
        holder = cluster.wait_for(
            lambda: held(cluster.get("coordination.k8s.io/v1", "Lease", lease_name(bridge_id), NAMESPACE)),
            what="the job's Lease, held",
        )
        health = cluster.wait_for(
            lambda: reported(cluster.get("v1", "ConfigMap", health_config_map_name(bridge_id), NAMESPACE)),
            what="the job's health ConfigMap, this instance's report in it",
        )
        assert job.process is not None and job.process.poll() is None, job.log()[-3000:]  # still running
    finally:
        job.stop()
    assert sorted(r.value or b"" for r in records) == [f"m{i}".encode() for i in range(5)]
    assert {r.key for r in records} == {s.encode() for s in sent}  # keyed by JMSMessageID, the default
    assert holder == lease_holder_identity("primary", f"{name}-driver")
    assert json.loads(health)["jms"]["state"] == "Connected", health


@pytest.fixture()
def operator_process(
    operator_venv: ImageVenv, cluster: KubeApi, no_kafka_checks: None, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """The operator image's ENTRYPOINT and CMD, from its venv, with its ENV HOME (a writable /tmp), as the
    chart's ServiceAccount of a release serving every namespace (the image's CMD serves them all)."""
    identity = install_identity(cluster, "jmsbridge", *ALL_NAMESPACES)
    image = Image.parse(OPERATOR_DOCKERFILE)
    ((entrypoint, *arguments),) = image.values("ENTRYPOINT")
    (command,) = image.values("CMD")
    log_path = tmp_path / "operator.log"
    env = operator_venv.env(HOME=str(tmp_path), PYTHONUNBUFFERED="1", KUBECONFIG=str(identity.kubeconfig))
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(operator_venv.bin(entrypoint)), *arguments, *command],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path, start_new_session=True,
        )  # fmt: skip
    try:
        yield process, log_path
    finally:
        stop_group(process, 30)
    refused = cluster.refused(identity.user)
    assert not refused, f"the chart's RBAC refused {len(refused)} request(s): {refused[:5]}"


def test_the_operator_image_runs_its_command_from_a_clean_venv(
    operator_process: tuple[subprocess.Popen[bytes], Path], cluster: KubeApi, tmp_path: Path
) -> None:
    process, log_path = operator_process
    name = "image-operator"
    bridge = {
        "apiVersion": "jmsbridge.dev/v1alpha1",
        "kind": "JmsBridge",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "jms": {
                "connectionFactory": {"className": "a.B", "properties": {"brokerURL": "tcp://jms:61616"}},
                "sources": [{"queue": "orders"}],
            },
            "kafka": {"bootstrapServers": "kafka:9092"},
        },
    }
    route = route_document("all", name, "orders")
    route["metadata"]["namespace"] = NAMESPACE
    cluster.create(bridge)
    cluster.create(route)

    def application() -> dict[str, Any] | None:
        assert process.poll() is None, log_path.read_text()[-3000:]  # it did not exit
        applications = cluster.list("sparkoperator.k8s.io/v1beta2", "SparkApplication", NAMESPACE)
        return applications[0] if applications else None

    created = cluster.wait_for(application, timeout=60, what="the operator's SparkApplication")
    assert created["metadata"]["ownerReferences"][0]["name"] == name
