"""scripts/release.sh: the chart archive and install.yaml a user pulls, at the package version."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from bridge_job import __version__
from testbed.apiserver import tools
from testbed.apiserver.client import KubeApi

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def release(*args: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("helm") is None:
        message = "helm is not installed (scripts/install-helm.sh installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    env = {**os.environ, "PYTHON": sys.executable}  # the wheel is built by this interpreter's pip
    return subprocess.run(
        [REPO / "scripts" / "release.sh", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One release for the tests that read it: it builds a wheel in an isolated pip environment."""
    out = tmp_path_factory.mktemp("dist")
    result = release("--no-images", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "images:   not built (--no-images)" in result.stdout
    return out


def test_the_release_packages_the_chart_the_crds_and_the_cli_at_the_package_version(released: Path) -> None:
    with tarfile.open(released / f"jms-bridge-operator-{__version__}.tgz") as archive:
        chart_file = archive.extractfile("jms-bridge-operator/Chart.yaml")
        assert chart_file is not None
        chart = yaml.safe_load(chart_file)
        packaged_crds = sorted(n for n in archive.getnames() if n.startswith("jms-bridge-operator/crds/"))
    assert (chart["version"], chart["appVersion"]) == (__version__, __version__)
    assert [Path(n).name for n in packaged_crds] == sorted(p.name for p in (REPO / "crds").glob("*.yaml"))

    installed = [d for d in yaml.safe_load_all((released / "install.yaml").read_text()) if d]
    assert {(d["kind"], d["spec"]["names"]["kind"]) for d in installed} == {
        ("CustomResourceDefinition", "JmsBridge"),
        ("CustomResourceDefinition", "JmsBridgeRoute"),
    }
    assert installed == [yaml.safe_load(p.read_text()) for p in sorted((REPO / "crds").glob("*.yaml"))]

    with zipfile.ZipFile(released / f"jms_bridge_operator-{__version__}-py3-none-any.whl") as wheel:
        metadata = wheel.read(f"jms_bridge_operator-{__version__}.dist-info/METADATA").decode()
        entry_points = wheel.read(f"jms_bridge_operator-{__version__}.dist-info/entry_points.txt").decode()
    assert f"Version: {__version__}" in metadata.splitlines()
    assert "jmsbridge = jmsbridge.cli:main" in entry_points


def test_the_release_refuses_a_chart_of_another_version(tmp_path: Path) -> None:
    """A checkout copy whose Chart.yaml was not bumped with bridge_job.__version__."""
    copy = tmp_path / "repo"
    for part in ("scripts", "bridge_job", "charts", "crds"):
        shutil.copytree(REPO / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    chart_yaml = copy / "charts" / "jms-bridge-operator" / "Chart.yaml"
    chart_yaml.write_text(chart_yaml.read_text().replace(f"version: {__version__}", "version: 9.9.9"))
    result = subprocess.run(
        [copy / "scripts" / "release.sh", "--no-images", "--out", str(tmp_path / "dist")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert f"says version 9.9.9, appVersion {__version__}; bridge_job.__version__ is {__version__}" in (
        result.stderr
    )
    assert not (tmp_path / "dist").exists()


def test_install_yaml_installs_the_crds_with_kubectl(
    tmp_path: Path, released: Path, kube_api: KubeApi
) -> None:
    """On the real API server (over the CRDs the suite installed, if any: server-side apply takes them
    over), then the examples apply, validated by the server against what install.yaml installed."""
    kubectl = tools.kubectl()
    env = {**os.environ, "KUBECONFIG": str(kube_api.kubeconfig), "HOME": str(tmp_path / "home")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([kubectl, *args], env=env, capture_output=True, text=True, timeout=60)

    installed = run("apply", "--server-side", "-f", str(released / "install.yaml"))
    assert installed.returncode == 0, installed.stderr
    assert "customresourcedefinition.apiextensions.k8s.io/jmsbridges.jmsbridge.dev serverside-applied" in (
        installed.stdout
    )
    run("create", "namespace", "apps")
    applied = run("apply", "-n", "apps", "-f", str(EXAMPLES))
    assert applied.returncode == 0, applied.stderr
    assert "jmsbridge.jmsbridge.dev/orders created" in applied.stdout
