"""The bridge's NATS credentials against real nats-servers that ask for them: a user and password, a
token, a `.creds` file (an operator-mode server, its JWTs made in tests/support/nats_accounts.py). A
refusal stops the bridge at once with one line naming the Secret to check, at connect and when a running
connection's user is removed; a subject the user may not publish or subscribe to stops it too, so that a
message the server dropped is never counted as published."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bridge_job.config import ENV_NATS_CREDS, ENV_NATS_PASSWORD, ENV_NATS_TOKEN, ENV_NATS_USERNAME, NatsSpec
from bridge_job.faults.stops import BridgeStopped
from bridge_job.nats.link import NatsLink, refused
from bridge_job.nats.message import NatsPublish
from jmsbridge.local import wait_until
from testbed.brokers import NatsServer
from tests.support.nats_accounts import Account

USERS = """authorization {{ users = [
  {{ user: bridge, password: s3cret, permissions: {{
      publish: {{ allow: ["allowed.>", "_INBOX.>"] }}, subscribe: {{ allow: ["allowed.>", "_INBOX.>"] }} }} }}
  {extra}
] }}
"""


def spec(server: NatsServer, **credentials: Any) -> NatsSpec:
    return NatsSpec.model_validate({"servers": [server.url], **credentials})


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[NatsServer, Path]]:
    """A server with one user, allowed `allowed.>` only; its configuration file, to change and reload."""
    config = tmp_path / "users.conf"
    config.write_text(USERS.format(extra=""))
    server = NatsServer(args=["-c", str(config)]).start()
    yield server, config
    server.cleanup()


def connected(spec: NatsSpec) -> NatsLink:
    link = NatsLink(spec, "test", patience_seconds=300)  # a refusal must not wait for the patience
    link.connect()
    return link


def as_the_bridge(server: NatsServer, monkeypatch: pytest.MonkeyPatch) -> NatsLink:
    """Connected as the served configuration's one user."""
    monkeypatch.setenv(ENV_NATS_USERNAME, "bridge")
    monkeypatch.setenv(ENV_NATS_PASSWORD, "s3cret")
    return connected(spec(server, credentialsSecretRef={"name": "nats-user"}))


def test_a_user_and_password_connect_and_a_wrong_one_stops_at_once(
    served: tuple[NatsServer, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = served
    as_the_bridge(server, monkeypatch).close()
    credentials = {"credentialsSecretRef": {"name": "nats-user"}}

    monkeypatch.setenv(ENV_NATS_PASSWORD, "wrong")
    with pytest.raises(BridgeStopped) as stopped:
        connected(spec(server, **credentials))
    assert f"NATS {server.url} refused the bridge" in stopped.value.reason
    assert "Authorization Violation" in stopped.value.reason
    assert "check the user and password in Secret nats-user" in stopped.value.reason


def test_a_server_that_asks_for_credentials_the_spec_does_not_name(served: tuple[NatsServer, Path]) -> None:
    server, _ = served
    with pytest.raises(BridgeStopped, match=r"name them in spec\.nats \(credentialsSecretRef"):
        connected(spec(server))


def test_a_token_connects(monkeypatch: pytest.MonkeyPatch) -> None:
    server = NatsServer(args=["--auth", "t0ken"]).start()
    try:
        monkeypatch.setenv(ENV_NATS_TOKEN, "t0ken")
        connected(spec(server, tokenSecretRef={"name": "nats", "key": "token"})).close()
        monkeypatch.setenv(ENV_NATS_TOKEN, "other")
        with pytest.raises(BridgeStopped, match="check the token in Secret nats, key token"):
            connected(spec(server, tokenSecretRef={"name": "nats", "key": "token"}))
    finally:
        server.cleanup()


def test_a_creds_file_connects_to_an_operator_mode_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = Account.new()
    server = NatsServer(args=["-c", str(account.server_config(tmp_path / "operator.conf"))]).start()
    creds = {"credsSecretRef": {"name": "nats-creds", "key": "bridge.creds"}}
    try:
        monkeypatch.setenv(ENV_NATS_CREDS, account.creds("bridge"))
        link = connected(spec(server, **creds))
        link.publish_all([NatsPublish("anything", b"x")])  # a user of the account may publish
        link.close()

        monkeypatch.setenv(ENV_NATS_CREDS, Account.new().creds("stranger"))  # an account it does not trust
        with pytest.raises(BridgeStopped) as stopped:
            connected(spec(server, **creds))
        assert "refused the bridge" in stopped.value.reason
        assert "check the .creds file in Secret nats-creds, key bridge.creds" in stopped.value.reason
    finally:
        server.cleanup()


@pytest.mark.parametrize(
    ("creds", "message"),
    [
        (None, "the NATS .creds file needs the environment variable JMSBRIDGE_NATS_CREDS (from Secret c"),
        ("user: bridge\n", "(from Secret c, key k) is no .creds file: it lacks `-----BEGIN NATS USER JWT"),
    ],
)
def test_creds_missing_or_not_a_creds_file_stop_with_one_line(
    creds: str | None, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_NATS_CREDS, raising=False)
    if creds is not None:
        monkeypatch.setenv(ENV_NATS_CREDS, creds)
    nats_spec = NatsSpec.model_validate(
        {"servers": ["nats://127.0.0.1:1"], "credsSecretRef": {"name": "c", "key": "k"}}
    )
    with pytest.raises(BridgeStopped) as stopped:
        NatsLink(nats_spec, "test", 300)
    assert message in stopped.value.reason


def test_a_subject_the_user_may_not_use_stops_the_bridge(
    served: tuple[NatsServer, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    link = as_the_bridge(served[0], monkeypatch)
    try:
        link.publish_all([NatsPublish("allowed.one", b"x")])
        # The server drops a publish it refuses and says so only in an error: it must not count as sent.
        with pytest.raises(BridgeStopped) as stopped:
            link.publish_all([NatsPublish("allowed.two", b"x"), NatsPublish("forbidden.one", b"x")])
        assert "refused the bridge a publish" in stopped.value.reason
        assert 'permissions violation for publish to "forbidden.one"' in stopped.value.reason.lower()
        assert "grant the bridge's NATS user that permission" in stopped.value.reason
        with pytest.raises(BridgeStopped, match=r"refused the bridge a subscription to forbidden\.>"):
            link.subscribe("forbidden.>", "q", lambda message: None)
    finally:
        link.close()


def test_a_user_removed_while_connected_stops_the_bridge(
    served: tuple[NatsServer, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, config = served
    link = as_the_bridge(server, monkeypatch)
    try:
        config.write_text(USERS.format(extra="").replace("user: bridge", "user: someone-else"))
        assert server.process is not None
        os.kill(server.process.pid, signal.SIGHUP)  # nats-server reloads its configuration

        def stopped() -> bool:
            try:
                link.check()
            except BridgeStopped as stop:
                assert "refused the bridge" in stop.reason
                assert "check the user and password in Secret nats-user" in stop.reason
                return True
            return False

        wait_until(stopped, 30, "the bridge to stop on the server's refusal")
    finally:
        link.close()


@pytest.mark.parametrize(
    ("error", "is_refusal"),
    [
        ("nats: 'Authorization Violation'", True),
        ("nats: 'User Authentication Expired'", True),
        ("nats: 'User Authentication Revoked'", True),
        ("nats: 'Account Authentication Expired'", True),
        ("nats: 'Authentication Timeout'", False),  # a slow client's: trying again may mend it
        ("nats: no servers available for connection", False),
    ],
)
def test_what_counts_as_a_refusal(error: str, is_refusal: bool) -> None:
    assert refused(Exception(error)) is is_refusal
