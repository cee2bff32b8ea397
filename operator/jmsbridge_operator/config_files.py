"""The job's config files in the bridge's ConfigMap: one per bridge spec that an instance runs.

The ConfigMap is mounted into every instance, and the job re-reads its file while it runs (so routes
change without a restart). One file for the whole bridge would hand a new bridge spec to the running
active instance before the standby-first rollout had proven it (`rollout.py`). So a file is named by the
hash of the bridge spec it holds (`render.config_key`), each SparkApplication names its own
(`--config`), and the ConfigMap holds:

- the file of the current spec, from the rollout's first step on;
- every file a SparkApplication still names, with the current routes (a route change reaches every
  instance at once, as before; under a spec the routes do not fit, the file keeps its routes);
- while a replaced instance has not been submitted again (its old driver, reading the old file, may still
  run), every file it held before.

A file nobody reads any more goes with the next write. Everything here is pure.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from pydantic import ValidationError

from bridge_job.config import CONFIG_MOUNT_PATH, JobConfig
from jmsbridge_operator.render import config_key, config_text
from jmsbridge_operator.rollout import resubmitted


def file_of(application: Mapping[str, Any]) -> str | None:
    """The ConfigMap key an application's job reads (its `--config` argument under the mount)."""
    arguments = list((application.get("spec") or {}).get("arguments") or [])
    for flag, value in itertools.pairwise(arguments):
        if flag == "--config" and str(value).startswith(f"{CONFIG_MOUNT_PATH}/"):
            return str(value)[len(CONFIG_MOUNT_PATH) + 1 :]
    return None


def with_routes(text: str, config: JobConfig) -> str:
    """A file of a previous spec with the routes of `config`; as it was when they do not fit that spec
    (or it is no config at all: then it is not ours to mend, and goes once nobody reads it)."""
    try:
        previous = JobConfig.model_validate(yaml.safe_load(text))
        updated = JobConfig.model_validate({**previous.dump(), "routes": [r.dump() for r in config.routes]})
    except (ValidationError, yaml.YAMLError, TypeError):
        return text
    return config_text(updated)


def kept_files(
    live: Mapping[str, Any] | None, applications: Sequence[Mapping[str, Any]], config: JobConfig
) -> dict[str, str]:
    """The files of previous specs that instances still read, beside the file of `config`."""
    data: Mapping[str, str] = (live or {}).get("data") or {}
    new = config_key(config)
    read = {key for app in applications if (key := file_of(app)) is not None}
    if not all(resubmitted(app) for app in applications):
        read |= set(data)  # a replaced driver may still run on what it read before its replacement
    # A file lost with a ConfigMap deleted by hand: the current spec's rather than none (a job whose
    # file vanishes stops).
    return {
        key: with_routes(data[key], config) if key in data else config_text(config)
        for key in sorted(read - {new})
    }
