"""An operator that fails at startup: `run_operator` must re-raise the crash of its thread."""

from __future__ import annotations

from typing import Any

import kopf


@kopf.on.startup()
def fail(**_: Any) -> None:
    raise kopf.PermanentError("this operator cannot start")
