"""Every flow's reader reaches Spark's Python processes pickled (spark/readers.py): where it lands, a fresh
interpreter with no logging set up, it carries what a task needs and makes that process log redacted,
formatted lines. The tasks themselves set nothing up. And each plans only while its driver's tenure lasts
(spark/gate.py)."""

from __future__ import annotations

import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from bridge_job.egress.source import EgressReader
from bridge_job.faults.stops import LeadershipLost
from bridge_job.ingress.source import IngressReader
from bridge_job.nats_service.source import NatsReader
from bridge_job.redaction import MASK
from bridge_job.spark.gate import Gate, Tenure
from bridge_job.spark.intervals import INTERVAL_KEY
from bridge_job.spark.readers import FlowReader

SECRET = "s3cr3t-in-a-task"

LANDS = (
    "import logging, pickle, sys\n"
    "reader = pickle.loads(sys.stdin.buffer.read())\n"
    "print(type(reader).__name__, reader.config_path, reader.live)\n"
    f"logging.getLogger('jmsbridge.kafka').error('FAIL [rdkafka#producer-1] sasl.password={SECRET}')\n"
)


@pytest.mark.parametrize(
    "reader",
    [
        EgressReader("/etc/jmsbridge/config.yaml", "/work/checkpoint", live="127.0.0.1:40001"),
        IngressReader("/etc/jmsbridge/config.yaml", "/work/checkpoint", live="127.0.0.1:40001"),
        NatsReader("/etc/jmsbridge/config.yaml", live="127.0.0.1:40001"),
    ],
    ids=lambda reader: type(reader).__name__,
)
def test_a_reader_unpickled_in_a_fresh_process_logs_redacted_lines(reader: FlowReader) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LANDS],
        input=pickle.dumps(reader),
        capture_output=True,
        timeout=120,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    name = type(reader).__name__
    assert done.stdout.decode().split() == [name, "/etc/jmsbridge/config.yaml", "127.0.0.1:40001"]
    (line,) = done.stderr.decode().splitlines()
    assert line.endswith(f" ERROR jmsbridge.kafka: FAIL [rdkafka#producer-1] sasl.password={MASK}")


def test_a_reader_pickles_to_its_config_path_and_live_address_alone() -> None:
    reader = EgressReader("/etc/jmsbridge/config.yaml", "/work/checkpoint", live="127.0.0.1:40001")
    assert reader.__getstate__() == {"config_path": "/etc/jmsbridge/config.yaml", "live": "127.0.0.1:40001"}


@pytest.mark.parametrize("kind", [EgressReader, IngressReader, NatsReader], ids=lambda kind: kind.__name__)
def test_no_reader_plans_past_its_drivers_tenure(kind: type[FlowReader], tmp_path: Path) -> None:
    """Refused before the reader reads its config or asks Kafka anything (neither exists here)."""
    gate = Gate.new(tmp_path)
    gate.open(Tenure("orders-a_orders-a-driver", "2026-12-01T05:00:00.000000Z", time.monotonic() - 0.01))
    reader = kind(str(tmp_path / "absent.yaml"), gate_path=str(gate.path))
    with pytest.raises(LeadershipLost, match=r"tenure of orders-a_orders-a-driver .* is over"):
        reader.latestOffset({}, ReadAllAvailable())


def test_a_reader_plans_while_the_tenure_lasts(tmp_path: Path) -> None:
    gate = Gate.new(tmp_path)
    gate.open(Tenure("orders-a_orders-a-driver", "2026-12-01T05:00:00.000000Z", time.monotonic() + 60))
    reader = NatsReader(str(tmp_path / "absent.yaml"), gate_path=str(gate.path))
    assert reader.latestOffset({INTERVAL_KEY: 4}, ReadAllAvailable()) == {INTERVAL_KEY: 5}
