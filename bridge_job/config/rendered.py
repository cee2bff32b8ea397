"""The one config file the executors read, rendered from the user's files and re-rendered on change."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml

from bridge_job.config import JobConfig
from bridge_job.config.loading import load_job_config, rendered_document


class RenderedConfig:
    """The one config file executors read. From resource YAML it is rendered into the work dir and
    re-rendered when those files change; a rendered JobConfig (a mounted ConfigMap) is used as is."""

    def __init__(self, paths: Sequence[Path], work_dir: Path) -> None:
        self.sources = list(paths)
        self.config = load_job_config(self.sources)
        rendered_input = rendered_document(self.sources) is not None
        self.path = paths[0] if rendered_input else work_dir / "job.yaml"
        self._stamps = self._stat()
        if not rendered_input:
            self._write(self.config)

    def _stat(self) -> list[tuple[int, int]]:
        return [(p.stat().st_mtime_ns, p.stat().st_size) for p in self.sources]

    def _write(self, config: JobConfig) -> None:
        text = yaml.safe_dump(config.dump(), sort_keys=False)
        with tempfile.NamedTemporaryFile("w", dir=self.path.parent, delete=False, suffix=".tmp") as f:
            f.write(text)
        os.replace(f.name, self.path)  # atomic: a reader sees the old file or the new one

    def reload(self) -> JobConfig | None:
        """The new config when the sources changed and are valid; None when unchanged."""
        stamps = self._stat()
        if stamps == self._stamps:
            return None
        self._stamps = stamps
        config = load_job_config(self.sources)
        if config == self.config:
            return None
        if self.path not in self.sources:
            self._write(config)
        self.config = config
        return config
