"""Credentials are masked in everything the job prints: URLs, settings, tracebacks (and real logging)."""

from __future__ import annotations

import io
import logging
import re
import subprocess
import sys

import pytest

from bridge_job.faults.stops import BridgeStopped
from bridge_job.redaction import (
    MASK,
    SECRET_KEY_RE2,
    USER_INFO_RE2,
    Redacting,
    is_secret_key,
    redact,
    redact_logs,
    url_secrets,
)

SECRET = "hunter2-do-not-print"


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "jms.password",
        "trustStorePassword",
        "ssl.keystore.password",
        "ssl.key.password",
        "sasl.password",
        "sasl.jaas.config",
        "sasl.oauthbearer.client.secret",
        "java.naming.security.credentials",
        "accessToken",
    ],
)
def test_secret_looking_keys(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key",
    ["brokerURL", "userName", "jms.userName", "ssl.key.location", "sasl.oauthbearer.token.endpoint.url"],
)
def test_other_keys(key: str) -> None:
    assert not is_secret_key(key)


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (f"tcp://app:{SECRET}@amq:61616", f"tcp://app:{MASK}@amq:61616"),
        (
            f"failover:(tcp://a:61616,tcp://b:61616)?jms.userName=app&jms.password={SECRET}&x=1",
            f"failover:(tcp://a:61616,tcp://b:61616)?jms.userName=app&jms.password={MASK}&x=1",
        ),
        (
            f'sasl.jaas.config=PlainLoginModule required username="app" password="{SECRET}";',
            f'sasl.jaas.config={MASK} required username="app" password="{MASK}";',
        ),
        (f"{{'sasl.password': '{SECRET}', 'acks': 'all'}}", f"{{'sasl.password': '{MASK}', 'acks': 'all'}}"),
        (
            "Connection refused: tcp://127.0.0.1:61616 (a=b)",
            "Connection refused: tcp://127.0.0.1:61616 (a=b)",
        ),
    ],
)
def test_redact(text: str, redacted: str) -> None:
    assert redact(text) == redacted


def test_url_secrets_names_what_it_found_never_the_value() -> None:
    found = url_secrets(f"ssl://app:{SECRET}@amq:61617?trustStorePassword={SECRET}&verifyHostName=false")
    assert found == ["user:password@", "trustStorePassword"]
    assert url_secrets("failover:(tcp://amq:61616)?randomize=false") == []


def test_the_jobs_log_lines_are_redacted_tracebacks_too() -> None:
    """The job's `jmsbridge stopped:` line and a logged traceback, through the handler `redact_logs` sets."""
    stream = io.StringIO()
    logger = logging.getLogger("test.redaction")
    logger.propagate = False
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    try:
        redact_logs(logger)
        redact_logs(logger)  # once is enough: a second call does not wrap again
        assert isinstance(handler.formatter, Redacting) and not isinstance(handler.formatter.inner, Redacting)
        url = f"failover:(tcp://app:{SECRET}@amq:61616)?jms.password={SECRET}"
        stopped = BridgeStopped(f"cannot connect to {url}")
        logger.error("jmsbridge stopped: %s", stopped.reason)
        try:
            raise stopped
        except BridgeStopped:
            logger.exception("unexpected failure")
    finally:
        logger.removeHandler(handler)
    printed = stream.getvalue()
    assert SECRET not in printed
    assert (
        f"ERROR test.redaction: jmsbridge stopped: cannot connect to failover:(tcp://app:{MASK}@amq"
        in printed
    )
    assert "Traceback" in printed


def test_the_text_of_a_hard_failure_is_redacted_where_spark_logs_it() -> None:
    """Spark's JVM logs a failed task's exception text itself, past every Python log handler."""
    stopped = BridgeStopped(f"cannot connect to tcp://amq:61616?jms.password={SECRET}")
    assert SECRET not in str(stopped) and SECRET not in stopped.reason
    assert str(stopped) == f"{BridgeStopped.PREFIX}cannot connect to tcp://amq:61616?jms.password={MASK}"


def test_a_process_without_logging_set_up_logs_formatted_redacted_lines() -> None:
    """A Spark Python worker, where the tasks run, starts with no logging set up: a fresh interpreter."""
    script = (
        "import logging\n"
        "from bridge_job.redaction import redact_process_logs\n"
        "redact_process_logs()\n"
        "redact_process_logs()\n"  # every task calls it: the second adds nothing
        f"logging.getLogger('jmsbridge.kafka').error('FAIL [rdkafka#producer-1] sasl.password={SECRET}')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    (line,) = done.stderr.splitlines()
    assert line.endswith(f" ERROR jmsbridge.kafka: FAIL [rdkafka#producer-1] sasl.password={MASK}")


KEYS = [
    "jms.password", "trustStorePassword", "ssl.key.password", "sasl.oauthbearer.client.secret",
    "java.naming.security.credentials", "SASL.JAAS.CONFIG", "ssl.keystore.key", "PASSWORD", "fooPASSWORD",
    "api_token", "client-secret", "user", "brokerURL", "ssl.key.location", "tokens", "passwordless",
    "sslpassword", "pwdx", "ssl.keystore.location",
]  # fmt: skip


@pytest.mark.parametrize("key", KEYS)
def test_the_crds_re2_pattern_says_what_is_secret_key_says(key: str) -> None:
    """The CEL rules of the CRD (`matches`, RE2) refuse exactly the keys the operator refuses."""
    assert bool(re.search(SECRET_KEY_RE2, key)) == is_secret_key(key)
    assert "\\" not in SECRET_KEY_RE2 + USER_INFO_RE2  # a CEL string literal would read them as escapes


@pytest.mark.parametrize("url", ["tcp://u:p@amq:61616", "tcp://amq:61616", "failover:(tcp://a:1,tcp://b:2)"])
def test_the_crds_user_info_pattern_finds_what_url_secrets_finds(url: str) -> None:
    assert bool(re.search(USER_INFO_RE2, url)) == ("user:password@" in url_secrets(url))
