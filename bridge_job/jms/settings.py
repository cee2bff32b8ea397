"""The JMS client's classpath and credentials, for every connection of the job (the ingest's and the
ingress tasks')."""

from __future__ import annotations

import os
from collections.abc import Sequence

from bridge_job.config import ENV_JMS_PASSWORD, ENV_JMS_USERNAME, JobConfig
from bridge_job.errors import BridgeStopped

DEFAULT_CLASSPATH = ("/opt/jmsbridge/jms-lib/*.jar",)


def jms_credentials(config: JobConfig) -> tuple[str, str] | None:
    if config.bridge.jms.credentials_secret_ref is None:
        return None
    username, password = os.environ.get(ENV_JMS_USERNAME), os.environ.get(ENV_JMS_PASSWORD)
    if username is None or password is None:
        raise BridgeStopped(
            f"JMS credentials need the environment variables {ENV_JMS_USERNAME} and {ENV_JMS_PASSWORD} "
            f"(from Secret {config.bridge.jms.credentials_secret_ref.name})"
        )
    return username, password


def jms_classpath(config: JobConfig) -> Sequence[str]:
    if config.bridge.jms.classpath:
        return config.bridge.jms.classpath
    from_env = os.environ.get("JMSBRIDGE_CLASSPATH")
    return from_env.split(os.pathsep) if from_env else DEFAULT_CLASSPATH
