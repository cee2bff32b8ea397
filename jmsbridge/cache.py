"""Where scripts/setup.sh's steps keep what they fetch and build, as those scripts compute it: a
directory's own variable when set, else `$XDG_CACHE_HOME/jmsbridge/<name>` (`~/.cache` without it)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(name: str, variable: str | None = None) -> Path:
    """`$variable` when set and not empty, else the cache's `jmsbridge/<name>`."""
    given = os.environ.get(variable) if variable else None
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jmsbridge" / name
