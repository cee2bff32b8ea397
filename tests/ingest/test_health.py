"""The brokers' state as ingest tasks see it, carried in their rows to the driver's ConnectionHealth."""

from __future__ import annotations

import threading

from bridge_job.ingest.health import CONNECTED, MAX_TEXT, RowHealth, TaskHealth


class Listener:
    def __init__(self) -> None:
        self.failing_now: dict[str, str] = {}
        self.backs: list[str] = []

    def failing(self, what: str, error: object) -> None:
        self.failing_now[what] = str(error)

    def back(self, what: str) -> None:
        self.failing_now.pop(what, None)
        self.backs.append(what)


def test_a_task_says_nothing_before_it_connects_then_connected_then_what_fails() -> None:
    health = TaskHealth()
    assert health.column() == ""
    health.back("JMS")
    assert health.column() == CONNECTED
    assert not health.failing_now()
    health.failing("JMS source orders", "connection reset; password=hunter2")
    assert health.failing_now()
    assert health.column().startswith("JMS source orders: connection reset")
    assert "hunter2" not in health.column()  # redacted before it leaves the task
    health.failing("JMS source payments", "x" * 1000)
    assert len(health.column()) <= MAX_TEXT
    health.back("JMS source orders")
    health.back("JMS source payments")
    assert health.column() == CONNECTED


def test_the_driver_hears_each_partition_as_a_caller_of_its_own() -> None:
    jms, kafka = Listener(), Listener()
    rows = RowHealth(jms, kafka)
    rows.heard({"partition": 0, "jms": "", "kafka": ""})
    assert jms.backs == [] and kafka.backs == ["ingest 0"]  # nothing known of JMS yet
    rows.heard({"partition": 1, "jms": "JMS: refused", "kafka": "journalling: down"})
    assert jms.failing_now == {"ingest 1": "JMS: refused"}
    assert kafka.failing_now == {"ingest 1": "journalling: down"}
    rows.heard({"partition": 1, "jms": CONNECTED, "kafka": ""})
    assert jms.failing_now == {} and kafka.failing_now == {}


def test_the_driver_waits_until_every_partition_connected_or_it_is_told_to_stop() -> None:
    rows = RowHealth(Listener(), Listener())
    assert not rows.wait_connected([0, 1], lambda: False)
    rows.heard({"partition": 0, "jms": CONNECTED, "kafka": ""})
    later = threading.Timer(0.1, rows.heard, [{"partition": 1, "jms": CONNECTED, "kafka": ""}])
    later.start()
    assert rows.wait_connected([0, 1], lambda: True, poll=0.05)
    later.join()
