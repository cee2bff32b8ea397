"""A warm standby's queries wait at the gate until the driver opens it, and end when it is shut or when
the driver is gone; once open, each planning goes on only while the gate stays open and the tenure it
carries lasts. With Spark: tests/e2e/test_leadership.py (the standby's held queries move nothing while
the active runs, and move messages once it takes over) and tests/spark/test_readers.py (a reader plans
nothing past the tenure)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge_job.faults.stops import BridgeStopped, LeadershipLost
from bridge_job.formats.journal import Epoch
from bridge_job.spark.gate import Gate, Tenure, epoch_at, still_open, wait_at


def test_no_gate_lets_the_planning_through_at_once() -> None:
    wait_at(None, sleep=lambda seconds: pytest.fail("waited without a gate"))


def test_a_new_gate_is_closed_even_over_an_open_one_of_an_earlier_run(tmp_path: Path) -> None:
    earlier = Gate.new(tmp_path)
    earlier.open()
    gate = Gate.new(tmp_path)
    assert gate.path != earlier.path
    waits: list[float] = []

    def open_after_three(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 3:
            gate.open()

    wait_at(str(gate.path), sleep=open_after_three)
    assert len(waits) == 3


def test_a_shut_gate_ends_the_query(tmp_path: Path) -> None:
    gate = Gate.new(tmp_path)
    with pytest.raises(BridgeStopped, match="standby stopped before it held the lease"):
        wait_at(str(gate.path), sleep=lambda seconds: gate.shut())


def test_a_gate_removed_with_its_driver_ends_the_wait_when_the_parent_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate.new(tmp_path)
    gate.remove()
    parent = os.getppid()

    def parent_gone(seconds: float) -> None:
        monkeypatch.setattr(os, "getppid", lambda: parent + 1)  # reparented: the driver JVM is gone

    with pytest.raises(BridgeStopped):
        wait_at(str(gate.path), sleep=parent_gone)


def test_planning_goes_on_while_the_tenure_lasts_and_stops_when_it_is_over(tmp_path: Path) -> None:
    gate = Gate.new(tmp_path)
    gate.open(Tenure("orders-a_orders-a-driver", "2026-12-01T05:00:00.000000Z", valid_until=100.0))
    still_open(str(gate.path), clock=lambda: 99.9)
    with pytest.raises(LeadershipLost, match=r"tenure of orders-a_orders-a-driver \(lease acquired 2026"):
        still_open(str(gate.path), clock=lambda: 100.0)
    gate.renew(Tenure("orders-a_orders-a-driver", "2026-12-01T05:00:00.000000Z", valid_until=102.0))
    still_open(str(gate.path), clock=lambda: 100.0)


def test_without_a_lease_or_a_gate_planning_always_goes_on(tmp_path: Path) -> None:
    gate = Gate.new(tmp_path)
    gate.open()
    still_open(str(gate.path), clock=lambda: 1e12)
    still_open(None)
    still_open("")


def test_a_gate_shut_after_it_opened_stops_the_planning_and_stays_shut(tmp_path: Path) -> None:
    gate = Gate.new(tmp_path)
    gate.open(Tenure("a", "t", valid_until=100.0))
    gate.shut()
    gate.renew(Tenure("a", "t", valid_until=200.0))  # a renewal that came after the job shut it
    with pytest.raises(LeadershipLost, match="shut its queries' gate"):
        still_open(str(gate.path), clock=lambda: 0.0)


def test_the_gate_carries_the_journal_epoch_from_its_first_opening_on(tmp_path: Path) -> None:
    gate = Gate.new(tmp_path)
    assert epoch_at(str(gate.path)) is None  # closed: no epoch yet
    epoch = Epoch("a/pod-0", "a", "2026-12-02T04:00:00.000000Z", 3)
    gate.open(Tenure("a/pod-0", "2026-12-02T04:00:00.000000Z", 1e12), epoch)
    assert epoch_at(str(gate.path)) == epoch
    gate.renew(Tenure("a/pod-0", "2026-12-02T04:00:00.000000Z", 2e12))  # a renewal keeps it
    assert epoch_at(str(gate.path)) == epoch
    gate.shut()
    assert epoch_at(str(gate.path)) is None
    assert epoch_at("") is None


def test_a_renewal_before_the_takeover_opened_the_gate_lets_nothing_through(tmp_path: Path) -> None:
    """The ingest tasks' journal ids are fenced before the gate opens, within the patience: renewals come
    meanwhile, and the queries must not plan before the epoch is in the gate."""
    gate = Gate.new(tmp_path)
    gate.renew(Tenure("a/pod-0", "2026-12-02T04:00:00.000000Z", 1e12))
    with pytest.raises(LeadershipLost, match="shut its queries' gate"):
        still_open(str(gate.path), clock=lambda: 0.0)  # closed, as it was made
    assert epoch_at(str(gate.path)) is None
