"""A login from the environment the operator fills from a Secret (bridge_job/faults/credentials.py)."""

from __future__ import annotations

import pytest

from bridge_job.faults.credentials import login_from_environment
from bridge_job.faults.stops import BridgeStopped

NAMES = ("Kafka SASL", "USER_VAR", "PASSWORD_VAR", "kafka-login")


def test_a_login_is_read_from_its_two_variables() -> None:
    environ = {"USER_VAR": "bridge", "PASSWORD_VAR": ""}
    assert login_from_environment(*NAMES, environ=environ) == ("bridge", "")


@pytest.mark.parametrize(
    "environ",
    [{}, {"USER_VAR": "bridge"}, {"PASSWORD_VAR": "secret"}, {"USER_VAR": "", "PASSWORD_VAR": "secret"}],
    ids=["neither", "no-password", "no-username", "empty-username"],
)
def test_a_missing_login_stops_the_bridge_naming_the_variables_and_the_secret(
    environ: dict[str, str],
) -> None:
    with pytest.raises(BridgeStopped) as stopped:
        login_from_environment(*NAMES, environ=environ)
    assert str(stopped.value) == (
        "jmsbridge hard failure: Kafka SASL needs the environment variables USER_VAR and PASSWORD_VAR "
        "(from Secret kafka-login)"
    )
