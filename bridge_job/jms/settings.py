"""The JMS client's classpath, credentials and TLS stores, for every connection of the job (the ingest's
and the ingress tasks'), and the stop when the broker refuses them."""

from __future__ import annotations

import os
from collections.abc import Sequence

from bridge_job.config import (
    ENV_JMS_KEY_STORE_PASSWORD,
    ENV_JMS_PASSWORD,
    ENV_JMS_TRUST_STORE_PASSWORD,
    ENV_JMS_USERNAME,
    JMS_AUTHENTICATION_FAILED,
    JMS_TLS_FAILED,
    JobConfig,
    SecretKeyRef,
)
from bridge_job.faults.credentials import login_from_environment
from bridge_job.faults.stops import BridgeStopped
from bridge_job.jms.errors import JmsLoginRefused, JmsRefused, JmsTlsRefused
from bridge_job.jms.tls import Store

DEFAULT_CLASSPATH = ("/opt/jmsbridge/jms-lib/*.jar",)


def jms_credentials(config: JobConfig) -> tuple[str, str] | None:
    if config.bridge.jms.credentials_secret_ref is None:
        return None
    secret = config.bridge.jms.credentials_secret_ref.name
    return login_from_environment("the JMS login", ENV_JMS_USERNAME, ENV_JMS_PASSWORD, secret)


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


def jms_tls_stores(config: JobConfig) -> tuple[Store, ...]:
    """spec.jms.tls's stores, with their passwords from the environment the operator fills from their
    Secrets."""
    tls = config.bridge.jms.tls
    if tls is None:
        return ()
    stores = []
    if tls.trust_store_file is not None:
        password = _password(tls.trust_store_password_secret_ref, ENV_JMS_TRUST_STORE_PASSWORD)
        stores.append(Store("trust", tls.trust_store_file, password))
    if tls.key_store_file is not None:
        password = _password(tls.key_store_password_secret_ref, ENV_JMS_KEY_STORE_PASSWORD)
        stores.append(Store("key", tls.key_store_file, password))
    return tuple(stores)


def _password(ref: SecretKeyRef | None, variable: str) -> str | None:
    if ref is None:
        return None
    value = os.environ.get(variable)
    if value is None:
        raise BridgeStopped(
            f"the JMS TLS store's password needs the environment variable {variable} (from Secret "
            f"{ref.name}, key {ref.key})",
            JMS_TLS_FAILED,
        )
    return value


def tls_refused(config: JobConfig, error: JmsTlsRefused) -> BridgeStopped:
    """The stop for a TLS failure no retry mends, at once: the stores the bridge gave the JVM and where
    their passwords came from, and the JVM's words. The operator shows it as JmsTlsFailed."""
    tls = config.bridge.jms.tls
    given: list[str] = []
    if tls is not None and tls.trust_store_file is not None:
        given.append(f"trust store {tls.trust_store_file}{_from(tls.trust_store_password_secret_ref)}")
    if tls is not None and tls.key_store_file is not None:
        given.append(f"key store {tls.key_store_file}{_from(tls.key_store_password_secret_ref)}")
    stores = "; ".join(given) or "no store of the bridge's (spec.jms.tls is not set): the JVM's own CAs"
    return BridgeStopped(
        f"TLS to the JMS broker failed ({stores}): check that the trust store holds the CA of the broker's "
        f"certificate, and that the broker accepts the key store's certificate: {error}",
        JMS_TLS_FAILED,
    )


def _from(ref: SecretKeyRef | None) -> str:
    return f", its password from Secret {ref.name} key {ref.key}" if ref is not None else ""


def refused(config: JobConfig, error: JmsRefused) -> BridgeStopped:
    """The stop for a connection the broker or TLS refused: `login_refused` or `tls_refused`."""
    if isinstance(error, JmsTlsRefused):
        return tls_refused(config, error)
    assert isinstance(error, JmsLoginRefused)
    return login_refused(config, error)
