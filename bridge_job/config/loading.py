"""Reading bridge configuration from files: resource YAML a user writes, or the rendered JobConfig.

The job accepts either form at the same path, so `jmsbridge job -f bridge.yaml -f routes.yaml` on a laptop
and the mounted ConfigMap in a cluster go through one code path. Either way the configuration is judged by
`bridge_job.config.validation`, the operator's rules: the job runs nothing the operator would refuse.

Files are read strictly (`StrictLoader`): UTF-8 only, no key twice in a mapping, no absurd nesting. Every
problem is one line that names the file (and the line).

Files are followed as they change one way, `WatchedConfig` (the driver, the sources, the tasks), and
`PerConfig` keeps what a process's tasks build from a config file until the file changes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

import yaml
from pydantic import ValidationError

from bridge_job.config import (
    ConfigError,
    JmsBridge,
    JmsBridgeRoute,
    JmsBridgeSpec,
    JobConfig,
    Route,
    describe_validation_error,
    job_config,
    parse_resource,
)
from bridge_job.config.validation import (
    bridge_faults,
    duplicate_message,
    duplicates,
    fault_line,
    judge,
    refusals,
    warnings,
)

log = logging.getLogger("jmsbridge.config")

T = TypeVar("T")

MAX_DEPTH = 64  # a bridge's YAML nests about 6 levels; far deeper is a mistake or an attack


class StrictLoader(yaml.SafeLoader):
    """YAML's safe loader that refuses a key given twice in one mapping (the last would silently win)
    and nesting deeper than MAX_DEPTH (which would exhaust Python's stack)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", mark)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[object, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in first_line:
                message = f"key {key!r} given twice (first on line {first_line[key]}); keep one"
                raise yaml.constructor.ConstructorError(None, None, message, key_node.start_mark)
            first_line[key] = line
        return super().construct_mapping(node, deep)


def _yaml_problem(path: Path, error: yaml.YAMLError) -> str:
    """One line: `file:line:column: not valid YAML: what`."""
    mark = getattr(error, "problem_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else f"{path}"
    what = getattr(error, "problem", None) or str(error).splitlines()[0]
    context = getattr(error, "context", None)
    return f"{where}: not valid YAML: {f'{context}, ' if context else ''}{what}"


def parse_yaml(path: Path, text: str) -> list[Any]:
    """The documents of a YAML text, strictly; ConfigError naming the file and line otherwise."""
    try:
        return list(yaml.load_all(text, Loader=StrictLoader))
    except yaml.YAMLError as error:
        raise ConfigError(_yaml_problem(path, error)) from None


def read_text(path: Path) -> str:
    """A file's text; ConfigError when it cannot be read or is not UTF-8."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        byte = data[error.start]
        raise ConfigError(
            f"{path}: not UTF-8 text (byte 0x{byte:02x} at offset {error.start}); save it as UTF-8"
        ) from None


def read_documents(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The YAML documents of a file, each with a `file#index` label for error messages."""
    documents = [d for d in parse_yaml(path, read_text(path)) if d is not None]
    labelled = []
    for index, document in enumerate(documents):
        where = f"{path}" if len(documents) == 1 else f"{path}#{index + 1}"
        if not isinstance(document, dict):
            raise ConfigError(f"{where}: expected a mapping, got {type(document).__name__}")
        labelled.append((where, document))
    return labelled


Labelled = tuple[str, JmsBridge | JmsBridgeRoute]  # a resource and its `file#index`


def load_resources(paths: Sequence[Path]) -> list[Labelled]:
    """Parse every document; collect all problems before failing, so a user fixes them in one go."""
    resources: list[Labelled] = []
    problems: list[str] = []
    for path in paths:
        try:
            documents = read_documents(path)
        except ConfigError as error:
            problems.append(str(error))
            continue
        for where, document in documents:
            try:
                resources.append((where, parse_resource(document, where)))
            except ConfigError as error:
                problems.append(str(error))
    keys = [(where, (r.kind, r.metadata.namespace or "", r.metadata.name)) for where, r in resources]
    twice = duplicates(key for _, key in keys)
    problems += [f"{where}: {duplicate_message(*key)}" for where, key in keys if key in twice]
    if problems:
        raise ConfigError("\n".join(problems))
    return resources


def rendered_document(paths: Sequence[Path]) -> tuple[str, dict[str, Any]] | None:
    """The document of a rendered JobConfig: one file with one document that has no `kind`. None when the
    files hold resource YAML (JmsBridge, JmsBridgeRoute)."""
    if len(paths) != 1:
        return None
    documents = read_documents(paths[0])
    if len(documents) == 1 and "kind" not in documents[0][1]:
        return documents[0]
    return None


def refuse_faults(
    bridge: JmsBridgeSpec, name: str, routes: Sequence[Route], where: str, route_where: Mapping[str, str]
) -> None:
    """ConfigError unless the operator would take the bridge and every one of its routes."""
    faults = bridge_faults(bridge)
    for fault in warnings(faults):
        log.warning("%s: %s", where, fault.message)
    problems = [f"{where}: {fault_line(fault.reason, fault.message)}" for fault in refusals(faults)]
    by_name = sorted(routes, key=lambda route: route.name)
    for route, route_faults in judge(bridge, by_name, name).faults.items():
        problems += [f"{route_where[route]}: {fault_line(f.reason, f.message)}" for f in route_faults]
    if problems:
        raise ConfigError("\n".join(problems))


def _rendered_config(where: str, document: dict[str, Any]) -> JobConfig:
    try:
        config = JobConfig.model_validate(document)
    except ValidationError as error:
        raise ConfigError(describe_validation_error(error, where)) from None
    route_where = {route.name: f"{where}: routes: {route.name}" for route in config.routes}
    refuse_faults(config.bridge, config.bridge_id, config.routes, where, route_where)
    return config


def load_job_config(paths: Sequence[Path]) -> JobConfig:
    """A JobConfig from resource files (exactly one JmsBridge) or from one rendered JobConfig file."""
    rendered = rendered_document(paths)
    if rendered is not None:
        return _rendered_config(*rendered)
    resources = load_resources(paths)
    bridges = [(where, r) for where, r in resources if isinstance(r, JmsBridge)]
    routes = [(where, r) for where, r in resources if isinstance(r, JmsBridgeRoute)]
    if len(bridges) != 1:
        names = ", ".join(b.metadata.name for _, b in bridges) or "none"
        raise ConfigError(f"expected exactly one JmsBridge in {', '.join(map(str, paths))}, found {names}")
    bridge_where, bridge = bridges[0]
    strays = [r.metadata.name for _, r in routes if r.spec.bridge_ref.name != bridge.metadata.name]
    if strays:
        raise ConfigError(
            f"routes {', '.join(strays)} reference another bridge than {bridge.metadata.name!r}"
        )
    specs = [Route(name=r.metadata.name, spec=r.spec) for _, r in routes]
    route_where = {r.metadata.name: where for where, r in routes}
    refuse_faults(bridge.spec, bridge.metadata.name, specs, bridge_where, route_where)
    try:
        return job_config(bridge, [r for _, r in routes])
    except ValidationError as error:
        raise ConfigError(describe_validation_error(error, f"JmsBridge {bridge.metadata.name}")) from None


Stamps = tuple[tuple[int, int, int], ...]  # (mtime, size, inode) of each file


class WatchedConfig:
    """Config files re-read when they change (a mounted ConfigMap is updated in place by Kubernetes).

    The one way the job follows its config: routes change between micro-batches without restarting the
    job (every batch asks `current()`), the driver asks `changed()` for what is new since it last asked,
    and a reader that must keep what it started with asks `loaded`.
    """

    def __init__(self, paths: Path | Sequence[Path]) -> None:
        self.paths = [paths] if isinstance(paths, Path) else list(paths)
        self._seen: Stamps | None = None  # the files as last read
        self._config: JobConfig | None = None  # the last valid config read
        self._error: ConfigError | None = None  # why the files as last read are not valid

    def _stamps(self) -> Stamps:
        stats = [path.stat() for path in self.paths]  # follows the ConfigMap's ..data symlink swap
        return tuple((stat.st_mtime_ns, stat.st_size, stat.st_ino) for stat in stats)

    def _refresh(self) -> bool:
        """Read the files again when they changed since they were last read (or were invalid then);
        True when read. ConfigError when they are not valid."""
        stamps = self._stamps()
        if stamps == self._seen and self._error is None:
            return False
        self._seen = stamps
        try:
            self._config, self._error = load_job_config(self.paths), None
        except ConfigError as error:
            self._error = error
            raise
        return True

    def current(self) -> JobConfig:
        """The config the files hold now; ConfigError while they are not valid."""
        self._refresh()
        assert self._config is not None
        return self._config

    def changed(self) -> JobConfig | None:
        """The new config when the files changed since the last look and now say something else; None
        otherwise. ConfigError once per change that is not valid."""
        before = self._config
        if self._error is not None and self._stamps() == self._seen:
            return None  # still the invalid change already reported
        if not self._refresh() or self._config == before:
            return None
        return self._config

    @property
    def loaded(self) -> JobConfig:
        """The config as last read, read now if never: for a reader that keeps what it started with."""
        return self._config if self._config is not None else self.current()


class PerConfig(Generic[T]):
    """What a process builds from a config file (a task's Egress or Ingress), kept per file and rebuilt
    when the file changes, so that a route edit applies from the next batch on."""

    def __init__(self, build: Callable[[JobConfig], T]) -> None:
        self._build = build
        self._watched: dict[str, WatchedConfig] = {}
        self._built: dict[str, tuple[JobConfig, T]] = {}

    def current(self, config_path: str) -> T:
        """What `build` makes of the config file as it is now."""
        watched = self._watched.get(config_path)
        if watched is None:
            watched = self._watched[config_path] = WatchedConfig(Path(config_path))
        config = watched.current()
        built = self._built.get(config_path)
        if built is None or built[0] is not config:
            built = self._built[config_path] = (config, self._build(config))
        return built[1]
