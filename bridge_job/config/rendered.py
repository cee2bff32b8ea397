"""The one config file the executors read, rendered from the user's files and re-rendered on change."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml

from bridge_job.config import JobConfig
from bridge_job.config.loading import WatchedConfig, rendered_document


class RenderedConfig:
    """The one config file executors read. From resource YAML it is rendered into the work dir and
    re-rendered when those files change; a rendered JobConfig (a mounted ConfigMap) is used as is.
    The sources are followed by `WatchedConfig`, as the executors follow the rendered file."""

    def __init__(self, paths: Sequence[Path], work_dir: Path) -> None:
        self.sources = list(paths)
        self._watched = WatchedConfig(self.sources)
        self.config = self._watched.current()
        rendered_input = rendered_document(self.sources) is not None
        self.path = paths[0] if rendered_input else work_dir / "job.yaml"
        if not rendered_input:
            self._write(self.config)

    def _write(self, config: JobConfig) -> None:
        text = yaml.safe_dump(config.dump(), sort_keys=False)
        with tempfile.NamedTemporaryFile("w", dir=self.path.parent, delete=False, suffix=".tmp") as f:
            f.write(text)
        os.replace(f.name, self.path)  # atomic: a reader sees the old file or the new one

    def reload(self) -> JobConfig | None:
        """The new config when the sources changed and are valid; None when unchanged."""
        config = self._watched.changed()
        if config is None:
            return None
        if self.path not in self.sources:
            self._write(config)
        self.config = config
        return config
