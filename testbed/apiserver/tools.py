"""The `helm` and `kubectl` binaries the tests run, as users type them: those scripts/install-helm.sh puts
in /usr/local/bin (kubectl v1.35, within one minor version of the test API server), whatever PATH says
(CI puts /usr/bin first, where a machine may have a kubectl of its own)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

INSTALL_DIR = Path(os.environ.get("HELM_INSTALL_DIR") or "/usr/local/bin")


def _tool(name: str) -> str:
    path = INSTALL_DIR / name
    if not path.is_file():
        message = f"{path} is not installed (scripts/install-helm.sh installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return str(path)


def helm() -> str:
    return _tool("helm")


def kubectl() -> str:
    return _tool("kubectl")
