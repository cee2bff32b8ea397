"""Run as a process of its own (the TLS stores are the JVM's, fixed when it starts): opens the JMS
connection a bridge's file describes as the job's ingest does (its credentials, classpath and
spec.jms.tls from the environment), and prints what came of it as one JSON object: `connected`, or the
job's stop line and its reason when the broker or TLS refused, or the error an outage would be waited
out with."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bridge_job.config.loading import load_job_config
from bridge_job.faults.stops import BridgeStopped
from bridge_job.jms import JmsConnection, JmsError, JmsRefused
from bridge_job.jms.settings import jms_classpath, jms_credentials, jms_tls_stores, refused


def main(path: str) -> dict[str, object]:
    config = load_job_config([Path(path)])
    try:
        stores = jms_tls_stores(config)
        connection = JmsConnection(
            config.bridge.jms, jms_credentials(config), jms_classpath(config), "tls-probe", stores
        )
    except JmsRefused as error:
        stop = refused(config, error)
        return {"stopped": str(stop), "reason": stop.condition}
    except BridgeStopped as stop:
        return {"stopped": str(stop), "reason": stop.condition}
    except JmsError as error:
        return {"error": str(error)}
    connection.close()
    return {"connected": True}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
