"""Reading bridge configuration from files: resource YAML a user writes, or the rendered JobConfig.

The job accepts either form at the same path, so `jmsbridge job -f bridge.yaml -f routes.yaml` on a laptop
and the mounted ConfigMap in a cluster go through one code path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from bridge_job.config import (
    ConfigError,
    JmsBridge,
    JmsBridgeRoute,
    JobConfig,
    describe_validation_error,
    job_config,
    parse_resource,
)


def read_documents(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The YAML documents of a file, each with a `file#index` label for error messages."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror}") from None
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    labelled = []
    for index, document in enumerate(documents):
        where = f"{path}" if len(documents) == 1 else f"{path}#{index + 1}"
        if not isinstance(document, dict):
            raise ConfigError(f"{where}: expected a mapping, got {type(document).__name__}")
        labelled.append((where, document))
    return labelled


def load_resources(paths: Sequence[Path]) -> tuple[list[JmsBridge], list[JmsBridgeRoute]]:
    """Parse every document; collect all problems before failing, so a user fixes them in one go."""
    bridges: list[JmsBridge] = []
    routes: list[JmsBridgeRoute] = []
    problems: list[str] = []
    for path in paths:
        try:
            documents = read_documents(path)
        except ConfigError as error:
            problems.append(str(error))
            continue
        for where, document in documents:
            try:
                resource = parse_resource(document, where)
            except ConfigError as error:
                problems.append(str(error))
                continue
            (bridges if isinstance(resource, JmsBridge) else routes).append(resource)  # type: ignore[arg-type]
    if problems:
        raise ConfigError("\n".join(problems))
    return bridges, routes


def rendered_document(paths: Sequence[Path]) -> tuple[str, dict[str, Any]] | None:
    """The document of a rendered JobConfig: one file with one document that has no `kind`. None when the
    files hold resource YAML (JmsBridge, JmsBridgeRoute)."""
    if len(paths) != 1:
        return None
    documents = read_documents(paths[0])
    if len(documents) == 1 and "kind" not in documents[0][1]:
        return documents[0]
    return None


def load_job_config(paths: Sequence[Path]) -> JobConfig:
    """A JobConfig from resource files (exactly one JmsBridge) or from one rendered JobConfig file."""
    rendered = rendered_document(paths)
    if rendered is not None:
        where, document = rendered
        try:
            return JobConfig.model_validate(document)
        except ValidationError as error:
            raise ConfigError(describe_validation_error(error, where)) from None
    bridges, routes = load_resources(paths)
    if len(bridges) != 1:
        names = ", ".join(b.metadata.name for b in bridges) or "none"
        raise ConfigError(f"expected exactly one JmsBridge in {', '.join(map(str, paths))}, found {names}")
    bridge = bridges[0]
    strays = [r.metadata.name for r in routes if r.spec.bridge_ref.name != bridge.metadata.name]
    if strays:
        raise ConfigError(
            f"routes {', '.join(strays)} reference another bridge than {bridge.metadata.name!r}"
        )
    try:
        return job_config(bridge, routes)
    except ValidationError as error:
        raise ConfigError(describe_validation_error(error, f"JmsBridge {bridge.metadata.name}")) from None


class WatchedConfig:
    """A config file re-read when it changes (a mounted ConfigMap is updated in place by Kubernetes).

    Routes change between micro-batches without restarting the job: every batch asks `current()`.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int, int] | None = None
        self._config: JobConfig | None = None

    def current(self) -> JobConfig:
        stat = self.path.stat()  # follows the ConfigMap's ..data symlink swap
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if self._config is None or stamp != self._stamp:
            self._config = load_job_config([self.path])
            self._stamp = stamp
        return self._config
