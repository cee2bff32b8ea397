"""Exit 0 when this checkout is installed in editable mode, in its own `.venv`, with everything its
[test] extra needs.

`scripts/setup.sh` runs pip only when this says no: on a fresh machine, after a change of the
dependencies, the version or the commands in pyproject.toml, or when another checkout is installed.
It must run with the venv's interpreter (`.venv/bin/python scripts/installed.py`): what it checks is
that interpreter's environment, and the setup installs nowhere else. Every requirement is checked with
its version range, and so are the extras it asks of other packages (`pyspark[sql]`). Run as a script, so
that the checkout's own `*.egg-info` is not what importlib finds.
"""

from __future__ import annotations

import ast
import json
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv"


def _missing(requirements: list[str], project: str, extras: dict[str, list[str]]) -> list[str]:
    try:
        from packaging.markers import UndefinedEnvironmentName
        from packaging.requirements import Requirement
        from packaging.utils import canonicalize_name
    except ImportError:  # a fresh machine: nothing is installed yet
        return ["packaging"]
    missing: list[str] = []
    seen: set[tuple[str, str]] = set()
    queue = [(Requirement(text), "") for text in requirements]
    while queue:
        requirement, extra = queue.pop()
        try:
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
                continue
        except UndefinedEnvironmentName:
            continue
        name = canonicalize_name(requirement.name)
        if name == canonicalize_name(project):  # the project's own extras, from pyproject.toml
            for wanted in sorted(requirement.extras - {extra for key, extra in seen if key == name}):
                seen.add((name, wanted))
                queue += [(Requirement(text), "") for text in extras[wanted]]
            continue
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            missing.append(str(requirement))
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            missing.append(f"{requirement} (installed: {version})")
        for wanted in sorted(requirement.extras):
            if (name, wanted) not in seen:
                seen.add((name, wanted))
                queue += [(Requirement(text), wanted) for text in metadata.requires(requirement.name) or []]
    return missing


def _source_version() -> str:
    tree = ast.parse((ROOT / "bridge_job" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__version__" for t in node.targets):
            return str(ast.literal_eval(node.value))
    raise SystemExit("bridge_job/__init__.py has no __version__")


def problems() -> list[str]:
    if Path(sys.prefix).resolve() != VENV.resolve():
        return [f"{sys.executable} is not the interpreter of {VENV}"]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    name = pyproject["name"]
    try:
        installed = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return [f"{name} is not installed"]
    found: list[str] = []
    direct_url = json.loads(installed.read_text("direct_url.json") or "{}")
    if not direct_url.get("dir_info", {}).get("editable") or direct_url.get("url") != ROOT.as_uri():
        found.append(f"{name} is not installed in editable mode from {ROOT}")
    if installed.version != _source_version():
        found.append(f"{name} {installed.version} is installed, the checkout is {_source_version()}")
    commands = {entry.name: entry.value for entry in installed.entry_points.select(group="console_scripts")}
    if commands != pyproject.get("scripts", {}):
        found.append(f"{name}'s commands changed since it was installed")
    extras = pyproject["optional-dependencies"]
    wanted = [*pyproject["dependencies"], *extras["test"]]
    found += [f"missing: {requirement}" for requirement in _missing(wanted, name, extras)]
    return found


if __name__ == "__main__":
    found = problems()
    for problem in found:
        print(f"setup: {problem}", file=sys.stderr)
    sys.exit(1 if found else 0)
