"""The release version is written once (`bridge_job.__version__`); everything that names it agrees."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

import yaml

from bridge_job import __version__
from bridge_job.config import DEFAULT_JOB_IMAGE, JOB_IMAGE

REPO = Path(__file__).resolve().parents[1]


def test_the_package_reads_its_version_from_bridge_job() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "bridge_job.__version__"}


def test_the_chart_and_the_default_job_image_name_the_package_version() -> None:
    chart = yaml.safe_load((REPO / "charts" / "jms-bridge-operator" / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == (__version__, __version__)
    assert f"{JOB_IMAGE}:{__version__}" == DEFAULT_JOB_IMAGE


def test_examples_and_crds_name_no_other_version() -> None:
    """Where they name the job image at all: the examples leave it to the operator (DEFAULT_JOB_IMAGE)."""
    files = [*REPO.glob("examples/**/*.yaml"), *REPO.glob("crds/*.yaml"), *REPO.glob("charts/**/*.yaml")]
    tags = {
        f"{path.relative_to(REPO)}: {tag}"
        for path in files
        for tag in re.findall(rf"{re.escape(JOB_IMAGE)}:([\w.+-]+)", path.read_text())
    }
    assert {tag for tag in tags if not tag.endswith(f": {__version__}")} == set()


def test_the_build_script_tags_both_images_with_the_package_version() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("REGISTRY", "SPARK_VERSION")}
    script = REPO / "scripts" / "build-images.sh"
    printed = subprocess.run([script, "--dry-run"], env=env, capture_output=True, text=True, check=True)
    image = yaml.safe_load((REPO / "charts" / "jms-bridge-operator" / "values.yaml").read_text())["image"]
    assert re.findall(r"--tag (\S+)", printed.stdout) == [
        f"{image['registry']}/{image['repository']}:{__version__}",  # the chart's image, at its appVersion
        f"{JOB_IMAGE}:{__version__}",  # what every SparkApplication names by default
    ]


def test_the_build_script_builds_multi_platform_images_and_pushes_them() -> None:
    """With --platforms: docker buildx for both images, pushed (a multi-platform image cannot stay in the
    local image store); without --push it refuses. The Dockerfiles name no architecture of their own."""
    env = {k: v for k, v in os.environ.items() if k not in ("REGISTRY", "SPARK_VERSION")}
    script = REPO / "scripts" / "build-images.sh"
    platforms = "linux/amd64,linux/arm64"
    printed = subprocess.run(
        [script, "--dry-run", "--push", "--platforms", platforms],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    builds = printed.stdout.splitlines()
    assert len(builds) == 2
    assert all(
        b.startswith(f"docker buildx build --platform {platforms} ") and b.endswith(" --push .")
        for b in builds
    )
    refused = subprocess.run(
        [script, "--dry-run", "--platforms", platforms], env=env, capture_output=True, text=True
    )
    assert refused.returncode == 2 and "add --push" in refused.stderr
    for dockerfile in (REPO / "images").glob("*/Dockerfile"):
        assert not re.search(r"amd64|x86_64|aarch64|arm64", dockerfile.read_text()), dockerfile
