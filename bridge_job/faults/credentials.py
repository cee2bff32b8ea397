"""A login the operator put in the job's environment from a Secret (never in the spec), or a hard failure
that names the variables and the Secret they come from."""

from __future__ import annotations

import os
from collections.abc import Mapping

from bridge_job.faults.stops import BridgeStopped


def login_from_environment(
    needed_by: str,
    username_variable: str,
    password_variable: str,
    secret: str,
    environ: Mapping[str, str] | None = None,
) -> tuple[str, str]:
    """(username, password) from the two variables; a missing one, or an empty username, stops the
    bridge: `needed_by` (e.g. "Kafka SASL") is what asked for them."""
    env = os.environ if environ is None else environ
    username, password = env.get(username_variable), env.get(password_variable)
    if not username or password is None:
        raise BridgeStopped(
            f"{needed_by} needs the environment variables {username_variable} and {password_variable} "
            f"(from Secret {secret})"
        )
    return username, password
