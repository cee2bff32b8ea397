"""Journal batch planning: bounded, fair across partitions, exact ranges."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bridge_job.formats.journal import journal_record
from bridge_job.message import Destination, DestinationKind, JmsMessage
from bridge_job.spark.offsets import plan_batch, records_between


def test_all_available_without_a_limit() -> None:
    assert plan_batch({"0": 5, "1": 0}, {"0": 10, "1": 3}, None) == {"0": 10, "1": 3}


def test_new_partition_starts_at_zero() -> None:
    assert plan_batch({"0": 5}, {"0": 5, "1": 4}, 100) == {"0": 5, "1": 4}


def test_limit_is_shared_fairly() -> None:
    assert plan_batch({"0": 0, "1": 0}, {"0": 1000, "1": 1000}, 100) == {"0": 50, "1": 50}
    # what one partition cannot use goes to the other
    assert plan_batch({"0": 0, "1": 0}, {"0": 1000, "1": 10}, 100) == {"0": 90, "1": 10}


@given(
    st.dictionaries(st.sampled_from("0123"), st.tuples(st.integers(0, 500), st.integers(0, 500))),
    st.integers(1, 700),
)
def test_plan_never_exceeds_limit_or_latest(ranges: dict[str, tuple[int, int]], limit: int) -> None:
    start = {p: min(a, b) for p, (a, b) in ranges.items()}
    latest = {p: max(a, b) for p, (a, b) in ranges.items()}
    end = plan_batch(start, latest, limit)
    assert records_between(start, end) == min(limit, records_between(start, latest))
    assert all(start[p] <= end[p] <= latest[p] for p in latest)


def test_journal_record_is_keyed_by_message_id() -> None:
    record = journal_record(JmsMessage(Destination(DestinationKind.QUEUE, "q"), body="hi", message_id="ID:1"))
    assert record.key == b"ID:1"
    assert record.value == b"hi"
