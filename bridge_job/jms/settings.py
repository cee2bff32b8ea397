"""The JMS client's classpath and credentials, for every connection of the job (the ingest's and the
ingress tasks'), and the stop when the broker refuses them."""

from __future__ import annotations

import os
from collections.abc import Sequence

from bridge_job.config import ENV_JMS_PASSWORD, ENV_JMS_USERNAME, JMS_AUTHENTICATION_FAILED, JobConfig
from bridge_job.errors import BridgeStopped
from bridge_job.jms.errors import JmsLoginRefused

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


def login_refused(config: JobConfig, error: JmsLoginRefused) -> BridgeStopped:
    """The stop for a login the broker refused, at once (no retry mends it): where the bridge read the
    login, and the broker's words. The operator shows it as JmsAuthenticationFailed."""
    ref = config.bridge.jms.credentials_secret_ref
    if ref is None:
        return BridgeStopped(
            f"the JMS broker refused a connection without a login (spec.jms.credentialsSecretRef is not "
            f"set): {error}",
            JMS_AUTHENTICATION_FAILED,
        )
    source = (
        f"{ENV_JMS_USERNAME} and {ENV_JMS_PASSWORD}, from Secret {ref.name}, keys {ref.username_key} and "
        f"{ref.password_key}"
    )
    return BridgeStopped(
        f"the JMS broker refused the bridge's login ({source}): a wrong password or an unknown user; fix "
        f"the Secret or the user on the broker: {error}",
        JMS_AUTHENTICATION_FAILED,
    )
