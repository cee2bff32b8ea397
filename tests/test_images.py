"""The container images' build contexts: every path they name exists and agrees with the code, the job
image holds the Spark the suite runs and every package the job imports. How the Dockerfiles are read:
tests/support/images.py. The images' Python environments, built as the Dockerfiles build them, run their
entry commands in tests/e2e/test_images.py.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import bridge_job
from bridge_job.config import (
    JOB_MAIN_FILE,
    SparkSpec,
)
from bridge_job.jms.settings import DEFAULT_CLASSPATH
from jmsbridge.cli import parser
from tests.support.images import JOB_DOCKERFILE, OPERATOR_DOCKERFILE, REPO, Image, image_path, read_only_root

ACTIVEMQ_JARS_DOCKERFILE = REPO / "images" / "jms-clients" / "activemq" / "Dockerfile"
CHART = REPO / "charts" / "jms-bridge-operator"
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# What a user puts into /opt/jmsbridge/jms-lib for ActiveMQ Classic: its client and the JMS 1.1 API.
ACTIVEMQ_CLIENT_JARS = (
    "activemq-client.jar",
    "geronimo-jms_1.1_spec.jar",
    "geronimo-j2ee-management-1.1-spec.jar",
    "hawtbuf.jar",
    "slf4j-api.jar",
)


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
    assert entrypoint == ("jmsbridge",) and "jmsbridge" in PROJECT["scripts"]
    (command,) = image.values("CMD")
    assert parser().parse_args(list(command)).command == "operator"
    assert image.requirements() == [".[operator]"]  # the project with its operator extra, nothing else

    values = yaml.safe_load((CHART / "values.yaml").read_text())
    user, _, group = image.values("USER")[-1][0].partition(":")
    security = values["podSecurityContext"]
    assert (security["runAsUser"], security["runAsGroup"]) == (int(user), int(group))
    deployment = (CHART / "templates" / "deployment.yaml").read_text()
    assert f"command: [{entrypoint[0]}]" in deployment


def requirement(text: str) -> Requirement:
    return Requirement(text)


def named(requirements: list[str], name: str) -> list[Requirement]:
    return [r for r in map(requirement, requirements) if canonicalize_name(r.name) == canonicalize_name(name)]


def test_the_job_image_the_pins_and_the_suite_run_one_spark() -> None:
    image = Image.parse(JOB_DOCKERFILE)
    spark = image.arg_default("SPARK_VERSION")
    assert spark is not None
    assert image.requirements()[0] == ".[job]"  # the project with its job extra
    (pinned,) = named(image.requirements()[1:], "pyspark")
    assert str(pinned.specifier) == f"=={spark}", "the image's pyspark is its base image's Spark"
    assert [str(r.specifier) for r in named(PROJECT["optional-dependencies"]["test"], "pyspark")] == [
        f"=={spark}"
    ], "the suite's pyspark (test extra) is the image's"
    assert metadata.version("pyspark") == spark  # and it is what this run runs
    assert SparkSpec().spark_version == spark  # what the SparkApplications ask for by default
    (needed,) = named(PROJECT["optional-dependencies"]["job"], "pyspark")
    assert needed.specifier.contains(spark), "the job extra states the range the code needs"


def third_party_imports(package: Path) -> dict[str, set[str]]:
    """Top-level modules outside the standard library and this project that the package's modules import
    (at module level or inside functions), each with the files that import it."""
    ours = {"bridge_job", "jmsbridge", "jmsbridge_operator"}
    found: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.partition(".")[0]
                if top not in sys.stdlib_module_names and top not in ours:
                    found.setdefault(top, set()).add(str(path.relative_to(REPO)))
    return found


def test_the_job_extra_holds_every_package_the_job_imports() -> None:
    declared = {
        canonicalize_name(requirement(text).name)
        for text in [*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["job"]]
    }
    distributions = metadata.packages_distributions()
    imports = third_party_imports(Path(bridge_job.__file__).parent)
    assert "kubernetes" in imports  # the walk sees the Lease's lazy import
    undeclared = {
        module: sorted(files)
        for module, files in imports.items()
        if not {canonicalize_name(d) for d in distributions.get(module, [module])} & declared
    }
    assert undeclared == {}, "imported by the job, missing in pyproject's dependencies and job extra"


@pytest.mark.parametrize("path", [JOB_DOCKERFILE, OPERATOR_DOCKERFILE], ids=["bridge-job", "operator"])
def test_the_images_are_labelled_with_their_source_and_release(path: Path) -> None:
    image = Image.parse(path)
    labels = image.labels()
    assert labels["org.opencontainers.image.version"] == "${VERSION}"
    assert labels["org.opencontainers.image.source"].startswith("https://")
    assert image.arg_default("VERSION")  # a build without the script still has a label
    build = (REPO / "scripts" / "build-images.sh").read_text()
    assert '--build-arg "VERSION=$version"' in build


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


def test_the_read_only_root_of_the_image_test_refuses_writes_but_to_tmp(tmp_path: Path) -> None:
    """The wrapper tests/e2e/test_images.py runs the job in: the root and the image's files read-only,
    /tmp (the pod's emptyDir) writable."""
    image = tmp_path / "image"
    image.mkdir()

    def run(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(read_only_root(["sh", "-c", script], [image]), capture_output=True, text=True)

    assert run(f"touch {tmp_path / 'scratch'}").returncode == 0
    for where in (image / "written", Path("/usr/local/jmsbridge-written")):
        done = run(f"touch {where}")
        assert done.returncode != 0 and "Read-only file system" in done.stderr, done
        assert not where.exists()
