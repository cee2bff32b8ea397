"""The operator tests' operators gather route changes briefly (JMSBRIDGE_SETTLE_SECONDS, _GATHER_SECONDS).

Deployed, a new bridge waits 2 s for its routes and a route change 0.5 s for the next, so that one
`kubectl apply` makes one reconciliation; a test that creates a bridge or changes a route would wait as
long, each time. The Secrets a bridge's pods read are read again every second, not every minute.
`test_api_economy.py` counts the writes of one apply, and runs with the deployed times.
"""

from __future__ import annotations

import pytest
from jmsbridge_operator.options import ENV_GATHER_SECONDS, ENV_SECRET_CHECK_INTERVAL, ENV_SETTLE_SECONDS


@pytest.fixture(autouse=True)
def brief_gathering(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_SETTLE_SECONDS, "0.1")
    monkeypatch.setenv(ENV_GATHER_SECONDS, "0.3")
    monkeypatch.setenv(ENV_SECRET_CHECK_INTERVAL, "1")  # a rotated Secret rolls its bridge within 1 s
