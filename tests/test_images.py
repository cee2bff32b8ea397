"""The container images' build contexts: every path they name exists and agrees with the code, and the job
image's file layout, assembled from this repository as its Dockerfile COPYs it, runs as the spark-operator
starts a SparkApplication's driver (that one, with real brokers and Spark: tests/e2e/test_images.py).

No image can be built or pulled here (no Docker daemon, no registry). The Dockerfiles are read with
BuildKit's own parser (the `dockerfile` package); what they copy is checked and assembled in a temp dir.
Two steps of the job image are played, not run: `pip install` of the copied sources (here the copied
sources are put on PYTHONPATH) and the image's Python (here this interpreter).
"""

from __future__ import annotations

import re
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dockerfile
import pytest
import yaml

from bridge_job.config import (
    JOB_MAIN_FILE,
    SparkSpec,
)
from bridge_job.jms.settings import DEFAULT_CLASSPATH
from jmsbridge.cli import parser

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
