"""The container images' build contexts: every path they name exists and agrees with the code, and the job
image's file layout, assembled from this repository as its Dockerfile COPYs it, runs as the spark-operator
starts a SparkApplication's driver.

No image can be built or pulled here (no Docker daemon, no registry). The Dockerfiles are read with
BuildKit's own parser (the `dockerfile` package); what they copy is checked and assembled in a temp dir.
Two steps of the job image are played, not run: `pip install` of the copied sources (here the copied
sources are put on PYTHONPATH) and the image's Python (here this interpreter).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dockerfile
import pytest
import yaml

from bridge_job.config import (
    CONFIG_MOUNT_PATH,
    JOB_MAIN_FILE,
    JmsBridge,
    JmsBridgeRoute,
    SparkSpec,
    job_config,
)
from bridge_job.jms.settings import DEFAULT_CLASSPATH
from bridge_job.message import Destination, DestinationKind, JmsMessage
from jmsbridge.cli import parser
from jmsbridge.local import ACTIVEMQ_HOME, BridgeJob
from tests.brokers import ActiveMqBroker, KafkaBroker
from tests.support.harness import bridge_document, read_topics, route_document, send

REPO = Path(__file__).resolve().parents[1]
JOB_DOCKERFILE = REPO / "images" / "bridge-job" / "Dockerfile"
OPERATOR_DOCKERFILE = REPO / "images" / "operator" / "Dockerfile"
ACTIVEMQ_JARS_DOCKERFILE = REPO / "images" / "jms-clients" / "activemq" / "Dockerfile"
CHART = REPO / "charts" / "jms-bridge-operator"
# What a user puts into /opt/jmsbridge/jms-lib for ActiveMQ Classic: its client and the JMS 1.1 API.
ACTIVEMQ_CLIENT_JARS = (
    "activemq-client.jar",
    "geronimo-jms_1.1_spec.jar",
    "geronimo-j2ee-management-1.1-spec.jar",
    "hawtbuf.jar",
    "slf4j-api.jar",
)


@dataclass(frozen=True)
class Copy:
    """A COPY from the build context (the repository root)."""

    sources: tuple[str, ...]
    destination: str


@dataclass(frozen=True)
class Image:
    commands: tuple[Any, ...]  # dockerfile.Command

    @classmethod
    def parse(cls, path: Path) -> Image:
        return cls(tuple(dockerfile.parse_file(str(path))))

    def values(self, instruction: str) -> list[tuple[str, ...]]:
        return [tuple(c.value) for c in self.commands if c.cmd == instruction]

    def copies(self) -> list[Copy]:
        return [
            Copy(tuple(c.value[:-1]), c.value[-1])
            for c in self.commands
            if c.cmd == "COPY" and not any(flag.startswith("--from=") for flag in c.flags)
        ]

    def env(self) -> dict[str, str]:
        pairs = [
            value for values in self.values("ENV") for value in zip(values[::2], values[1::2], strict=True)
        ]
        return dict(pairs)

    def arg_default(self, name: str) -> str | None:
        defaults = dict(v[0].partition("=")[::2] for v in self.values("ARG") if "=" in v[0])
        return defaults.get(name)


def assemble(image: Image, root: Path) -> Path:
    """The image's files from the build context under `root`, as `COPY` places them (sources into a
    destination ending in `/` keep their names; a directory's content is copied)."""
    for copy in image.copies():
        for source in copy.sources:
            origin = REPO / source
            target = root / copy.destination.lstrip("/")
            if copy.destination.endswith("/"):
                target = target / origin.name
            if origin.is_dir():
                shutil.copytree(
                    origin, target, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True
                )
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, target)
    return root


def image_path(uri_or_path: str) -> str:
    """`local:///opt/x` -> `/opt/x` (a path inside the image)."""
    return uri_or_path.removeprefix("local://")


# ---------------------------------------------------------------------------------------------------
# The build contexts


@pytest.mark.parametrize("path", [JOB_DOCKERFILE, OPERATOR_DOCKERFILE], ids=["bridge-job", "operator"])
def test_every_copy_source_exists(path: Path) -> None:
    copies = Image.parse(path).copies()
    assert copies, f"{path} copies nothing"
    missing = [source for copy in copies for source in copy.sources if not (REPO / source).exists()]
    assert missing == []


def test_the_job_image_holds_what_every_application_names() -> None:
    image = Image.parse(JOB_DOCKERFILE)
    destinations = {copy.destination: copy.sources for copy in image.copies()}
    main_file = image_path(JOB_MAIN_FILE)
    assert main_file in destinations, f"no COPY to {main_file} (JOB_MAIN_FILE)"
    assert (REPO / destinations[main_file][0]).read_text().lstrip().startswith('"""')
    jms_lib = str(Path(DEFAULT_CLASSPATH[0]).parent)  # the job's default JMS classpath
    assert any(f"mkdir -p {jms_lib}" in run[0] for run in image.values("RUN"))
    python = image.env()["PYSPARK_PYTHON"]
    assert any(f"-m venv {Path(python).parents[1]}" in run[0] for run in image.values("RUN"))
    # The Spark of the base image is the Spark the SparkApplications ask for by default.
    assert image.arg_default("SPARK_VERSION") == SparkSpec().spark_version
    assert image.values("FROM") == [("spark:${SPARK_VERSION}-python3",)]
    assert image.values("USER")[-1] == ("185",)  # the Spark image's own user, not root


def test_the_operator_image_runs_the_charts_command_as_the_charts_user() -> None:
    image = Image.parse(OPERATOR_DOCKERFILE)
    (entrypoint,) = image.values("ENTRYPOINT")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert entrypoint == ("jmsbridge",) and "jmsbridge" in project["project"]["scripts"]
    (command,) = image.values("CMD")
    assert parser().parse_args(list(command)).command == "operator"
    assert any('"/src[operator]"' in run[0] for run in image.values("RUN"))  # the operator extra

    values = yaml.safe_load((CHART / "values.yaml").read_text())
    user, _, group = image.values("USER")[-1][0].partition(":")
    security = values["podSecurityContext"]
    assert (security["runAsUser"], security["runAsGroup"]) == (int(user), int(group))
    deployment = (CHART / "templates" / "deployment.yaml").read_text()
    assert f"command: [{entrypoint[0]}]" in deployment


def jar_family(file_name: str) -> str:
    """`geronimo-jms_1.1_spec-1.1.1.jar` (Maven) and `geronimo-jms_1.1_spec.jar` (Debian): one family."""
    return re.sub(r"-[\d.]+$", "", file_name.removesuffix(".jar").replace("_", "-"))


def test_the_activemq_jar_image_holds_the_jars_the_job_runs_with() -> None:
    image = Image.parse(ACTIVEMQ_JARS_DOCKERFILE)
    version = image.arg_default("ACTIVEMQ_VERSION") or ""
    added = [
        (Path(value[0].replace("${ACTIVEMQ_VERSION}", version)).name, value[-1])
        for value in image.values("ADD")
    ]
    assert {destination for _, destination in added} == {"/jars/"}  # clientLibraries' default path
    assert {jar_family(name) for name, _ in added} == {jar_family(jar) for jar in ACTIVEMQ_CLIENT_JARS}


# ---------------------------------------------------------------------------------------------------
# The job image's layout, run as the spark-operator runs it


@dataclass
class SubmittedJob(BridgeJob):
    """The entry file under spark-submit, as a process group (BridgeJob's waits and stops)."""

    argv: list[str] = field(default_factory=list)

    def start(self) -> SubmittedJob:
        log_path = self.work_dir / f"driver-{len(self.logs)}.log"
        self.logs.append(log_path)
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=self.env,
                cwd=self.work_dir,
            )  # fmt: skip
        return self


def spark_submit() -> Path:
    import pyspark

    path = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    assert path.exists(), f"pyspark ships no {path}"
    return path


def rendered_application(bridge: dict[str, Any], route: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The primary SparkApplication the operator renders, and the job config its ConfigMap holds."""
    from jmsbridge_operator.render import render

    model = JmsBridge.model_validate(bridge)
    rendered = render(model, job_config(model, [JmsBridgeRoute.model_validate(route)]))
    (config_text,) = rendered.config_map["data"].values()
    return rendered.applications["primary"], config_text


@pytest.mark.e2e
def test_the_job_image_layout_runs_under_spark_submit(
    activemq: ActiveMqBroker, kafka: KafkaBroker, tmp_path: Path
) -> None:
    n = uuid.uuid4().hex[:8]
    queue, topic = f"orders.{n}", f"orders-{n}"
    kafka.create_topics(topic)
    bridge = bridge_document(f"image-{n}", activemq, kafka, [{"queue": queue}])
    del bridge["spec"]["jms"]["classpath"]  # the image's default: /opt/jmsbridge/jms-lib/*.jar
    bridge["metadata"] |= {"namespace": "apps", "uid": "uid-1"}
    bridge["spec"]["spark"]["checkpoint"] = {"path": str(tmp_path / "checkpoints")}  # an emptyDir there
    route = route_document("all", f"image-{n}", topic)
    route["metadata"]["namespace"] = "apps"
    application, config_text = rendered_application(bridge, route)

    root = assemble(Image.parse(JOB_DOCKERFILE), tmp_path / "image")

    def inside(path: str) -> Path:
        return root / path.lstrip("/")

    # The image's RUN mkdir, filled as spec.jms.clientLibraries or a derived image fills it.
    jms_lib = inside(str(Path(DEFAULT_CLASSPATH[0]).parent))
    jms_lib.mkdir(parents=True)
    for jar in ACTIVEMQ_CLIENT_JARS:
        (jms_lib / jar).symlink_to(ACTIVEMQ_HOME / "lib" / jar)
    # The ConfigMap, mounted where the driver's volumeMount puts it.
    inside(CONFIG_MOUNT_PATH).mkdir(parents=True)
    (inside(CONFIG_MOUNT_PATH) / "job.yaml").write_text(config_text)

    spec = application["spec"]
    assert CONFIG_MOUNT_PATH in {m["mountPath"] for m in spec["driver"]["volumeMounts"]}
    sources = inside("/opt/jmsbridge/src")
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join([str(sources), str(sources / "operator")]),  # pip install, played
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "JMSBRIDGE_CLASSPATH": str(jms_lib / "*.jar"),  # DEFAULT_CLASSPATH, re-rooted
    }
    where = "import bridge_job, jmsbridge; print(bridge_job.__file__, jmsbridge.__file__)"
    imported = subprocess.run(
        [sys.executable, "-c", where], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert all(Path(p).is_relative_to(sources) for p in imported.stdout.split()), imported.stdout

    argv = [str(spark_submit()), "--master", "local[2]", "--conf", "spark.ui.enabled=false"]
    argv += [arg for key, value in spec["sparkConf"].items() for arg in ("--conf", f"{key}={value}")]
    argv.append(str(inside(image_path(spec["mainApplicationFile"]))))
    argv += [str(inside(arg)) if arg.startswith("/") else arg for arg in spec["arguments"]]
    job = SubmittedJob([], tmp_path, env=env, argv=argv).start()
    try:
        job.wait_running(timeout=180)
        sent = send(
            activemq, [JmsMessage(Destination(DestinationKind.QUEUE, queue), body=f"m{i}") for i in range(5)]
        )
        records = read_topics(kafka, [topic], len(sent), settle=1.0)
        assert job.process is not None and job.process.poll() is None, job.log()[-3000:]  # still running
    finally:
        job.stop()
    assert sorted(r.value or b"" for r in records) == [f"m{i}".encode() for i in range(5)]
    assert {r.key for r in records} == {s.encode() for s in sent}  # keyed by JMSMessageID, the default
