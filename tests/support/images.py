"""The container images as their Dockerfiles describe them: what they copy, where, and their Python
environment, built here the way the Dockerfile builds it.

No image can be built or pulled here (no Docker daemon, no registry). The Dockerfiles are read with
BuildKit's own parser (the `dockerfile` package). What they COPY from the repository is assembled in a
directory (`assemble`), and their one `pip install -r <requirements file>` is run, from that copy as the
working directory, into a clean venv (`python -m venv`: no site packages but its own), so that a test
runs the image's entry command with exactly the packages the image would hold (`image_venv`).

A venv is cached in `.venv-cache/` (gitignored), keyed on what decides its packages: pyproject.toml, the
Dockerfile, the requirements file and the Python version. A run with the same key reuses it; the
project's own sources change with every edit and are not in the key, so they are installed again,
without dependencies, whenever the venv holds others.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dockerfile

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".venv-cache"
JOB_DOCKERFILE = REPO / "images" / "bridge-job" / "Dockerfile"
OPERATOR_DOCKERFILE = REPO / "images" / "operator" / "Dockerfile"
PIP_INSTALL_REQUIREMENTS = re.compile(r"(\S*/bin/)?pip install (?:--\S+ )*-r ([^\s;&|]+)")
# Variables of the test process that would let the venv's Python see more than the image's would.
LEAKY_ENV = (
    "PYTHONPATH",
    "PYTHONHOME",
    "VIRTUAL_ENV",
    "SPARK_HOME",
    "PYSPARK_PYTHON",
    "PYSPARK_DRIVER_PYTHON",
)


@dataclass(frozen=True)
class Copy:
    """A COPY from the build context (the repository root)."""

    sources: tuple[str, ...]
    destination: str


@dataclass(frozen=True)
class Image:
    path: Path
    commands: tuple[Any, ...]  # dockerfile.Command

    @classmethod
    def parse(cls, path: Path) -> Image:
        return cls(path, tuple(dockerfile.parse_file(str(path))))

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

    def labels(self) -> dict[str, str]:
        return {
            key: value.strip('"')
            for values in self.values("LABEL")
            for key, value in zip(values[::2], values[1::2], strict=True)
        }

    def pip_install(self) -> tuple[str, str]:
        """The one `pip install -r FILE` of the image: the working directory it runs in (the WORKDIR
        before it) and FILE, relative to that directory."""
        workdir, found = "/", []
        for command in self.commands:
            if command.cmd == "WORKDIR":
                workdir = command.value[0]
            elif command.cmd == "RUN":
                found += [(workdir, m.group(2)) for m in PIP_INSTALL_REQUIREMENTS.finditer(command.value[0])]
        assert len(found) == 1, f"{self.path}: {len(found)} `pip install -r` (one expected): {found}"
        return found[0]

    def requirements_file(self) -> Path:
        """The requirements file in the repository, found through the COPY that puts it where the
        `pip install -r` reads it."""
        workdir, relative = self.pip_install()
        inside = str(Path(workdir) / relative)
        (copy,) = [copy for copy in self.copies() if copy.destination == inside]
        return REPO / copy.sources[0]

    def requirements(self) -> list[str]:
        lines = self.requirements_file().read_text().splitlines()
        return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


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


@dataclass(frozen=True)
class ImageVenv:
    """An image's Python environment: a venv with exactly the packages its Dockerfile installs."""

    root: Path
    build_seconds: float  # 0 when reused as it was

    def bin(self, name: str) -> Path:
        return self.root / "bin" / name

    def env(self, **extra: str) -> dict[str, str]:
        """This process's environment without what would leak its packages into the venv's Python, with
        the venv's bin first on PATH (as the images' ENV PATH has it)."""
        env = {k: v for k, v in os.environ.items() if k not in LEAKY_ENV}
        return env | {"PATH": f"{self.root / 'bin'}{os.pathsep}{env.get('PATH', '')}"} | extra


def _digest(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:16]


def _tree_digest(root: Path) -> str:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return _digest(*(bytes(str(p.relative_to(root)), "utf-8") + p.read_bytes() for p in files))


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One builder at a time (pytest-xdist workers share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _pip(venv: Path, args: list[str], cwd: Path) -> None:
    # PIP_* settings of this machine (its download cache, local wheel folders) stay: they change where
    # pip finds a package, not which packages it installs.
    env = {k: v for k, v in os.environ.items() if k not in LEAKY_ENV}
    command = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    done = subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"pip install {' '.join(args)} in {cwd}:\n{done.stderr[-4000:]}"


def image_venv(image: Image, work: Path) -> ImageVenv:
    """The venv of `image`, built (or reused from the cache) as its Dockerfile builds it; `work` is a
    scratch directory for the copied sources."""
    workdir, requirements = image.pip_install()
    sources = assemble(image, work / "image") / workdir.lstrip("/")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    key = _digest(
        (REPO / "pyproject.toml").read_bytes(),
        image.path.read_bytes(),
        image.requirements_file().read_bytes(),
        python.encode(),
    )
    name = image.path.parent.name
    venv = CACHE / f"{name}-{key}"
    stamp = venv / "jmsbridge-sources"  # the digest of the project sources installed in the venv
    project = _tree_digest(sources)
    started = time.monotonic()
    with _locked(CACHE / f"{name}.lock"):
        if not stamp.exists():  # none, or a build that did not finish
            for stale in CACHE.glob(f"{name}-*"):  # older keys too: each holds a Spark
                shutil.rmtree(stale)
            # Built where it stays: a venv's scripts name its absolute path.
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            _pip(venv, ["-r", requirements], cwd=sources)
        elif stamp.read_text() == project:
            return ImageVenv(venv, 0.0)
        else:
            _pip(venv, ["--no-deps", "--force-reinstall", "."], cwd=sources)
        stamp.write_text(project)
    return ImageVenv(venv, time.monotonic() - started)


def read_only_root(argv: list[str], read_only: list[Path]) -> list[str]:
    """`argv` as a container with `readOnlyRootFilesystem: true` runs it: in a mount namespace of its own
    (`unshare`, as root) where `/` and each of `read_only` (the image's files, its venv, which live in
    writable places here) are read-only, and /tmp, the pod's emptyDir, is not. It refuses to start when
    a read-only place is writable (so a run proves something)."""
    quoted = [shlex.quote(str(path)) for path in read_only]
    steps = ["mount --bind /tmp /tmp"]  # its own mount, so that / goes read-only without it
    steps += [f"mount --bind {path} {path}" for path in quoted]
    steps += ["mount -o remount,bind,ro /"] + [f"mount -o remount,bind,ro {path}" for path in quoted]
    probes = ["/jmsbridge-probe", *(str(path / "jmsbridge-probe") for path in read_only)]
    steps += [f"! touch {shlex.quote(probe)} 2>/dev/null" for probe in probes]
    steps.append('exec "$@"')
    script = " && ".join(steps)
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "read-only-root", *argv]
