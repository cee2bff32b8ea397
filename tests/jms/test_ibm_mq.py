"""IBM MQ's real client jars (javax and Jakarta) under the adapter, with no queue manager: none can run
here, so this shows what can be shown: the factory is built and configured from a bridge's properties,
and a connection that no queue manager answers fails at once with a line that says where."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from testbed.brokers import free_port

GIVEN = {
    "hostName": "127.0.0.1",
    "queueManager": "QM1",
    "channel": "DEV.APP.SVRCONN",
    "transportType": 1,
    "sSLCipherSuite": "TLS_AES_256_GCM_SHA384",
}


@pytest.mark.parametrize(("api", "package"), [("javax", "javax.jms"), ("jakarta", "jakarta.jms")])
def test_an_ibm_mq_factory_is_configured_and_fails_clearly_without_a_queue_manager(
    api: str, package: str
) -> None:
    port = free_port()  # nothing listens there
    probe = [sys.executable, "-m", "tests.jms.ibm_mq_probe", api, str(port)]
    done = subprocess.run(probe, capture_output=True, text=True, timeout=120, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["given"] == GIVEN | {"port": port}
    assert found["api"] == package
    factory = (
        "com.ibm.mq.jms.MQConnectionFactory"
        if api == "javax"
        else "com.ibm.mq.jakarta.jms.MQConnectionFactory"
    )
    assert found["error"] == (
        f"cannot connect to {factory} (hostName=127.0.0.1, port={port}, queueManager=QM1, "
        "channel=DEV.APP.SVRCONN): Connection refused (ConnectException)"
    )
