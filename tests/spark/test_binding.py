"""The checkpoint binding's pure parts: what fits, what is another topic, what was lost; the offset log."""

from __future__ import annotations

from pathlib import Path

from bridge_job.spark.binding import (
    TopicBinding,
    TopicState,
    by_topic,
    check_topic,
    count_lost,
    describe,
    load_binding,
    load_start,
    lost_totals,
    out_of_range,
    save_binding,
    save_start,
    spark_offsets,
    with_known_ids,
)
from bridge_job.supervision.checkpoints import describe_change

RECORD = (0, 1_700_000_000_000, 1234)


def state(low: int = 0, high: int = 30, record: tuple[int, int, int] | None = RECORD) -> TopicState:
    return TopicState(True, None, {0: low}, {0: high}, {0: record})


def test_offsets_within_the_watermarks_and_the_same_record_fit() -> None:
    assert check_topic("j", TopicBinding(None, {0: RECORD}), {0: 24}, state()) is None
    assert check_topic("j", TopicBinding(None, {0: RECORD}), {0: 30}, state()) is None  # at the end


def test_a_shorter_topic_is_another_one() -> None:
    mismatch = check_topic("j", TopicBinding(None, {0: RECORD}), {0: 24}, state(high=5, record=None))
    assert mismatch is not None and not mismatch.lost
    assert mismatch.found == "partition 0 ends at 5" and "at 24" in mismatch.expected


def test_a_longer_topic_with_another_record_is_another_one() -> None:
    other = (0, 1_800_000_000_000, 99)
    mismatch = check_topic("j", TopicBinding(None, {0: RECORD}), {0: 24}, state(high=40, record=other))
    assert mismatch is not None and not mismatch.lost and "partition 0 offset 0" in mismatch.found


def test_another_topic_id_is_another_topic() -> None:
    bound = TopicBinding("id-a", {})
    found = TopicState(True, "id-b", {0: 0}, {0: 30})
    mismatch = check_topic("j", bound, {0: 24}, found)
    assert mismatch is not None and mismatch.found == "topic id id-b"


def test_records_below_the_low_watermark_are_lost_not_another_topic() -> None:
    mismatch = check_topic("j", TopicBinding(None, {0: RECORD}), {0: 24}, state(low=28))
    assert mismatch is not None and mismatch.lost and "offsets 24..27" in mismatch.expected
    # the bound record went to retention: nothing to compare, the range still holds
    assert check_topic("j", TopicBinding(None, {0: RECORD}), {0: 29}, state(low=28, record=None)) is None


def test_a_missing_topic_or_partition_is_a_mismatch() -> None:
    assert check_topic("j", None, {0: 3}, TopicState(False)) is not None
    assert out_of_range("j", {0: 1, 1: 2}, {0: 0}, {0: 5}) is not None


def test_the_stop_line_names_bridge_topic_checkpoint_and_the_reset() -> None:
    mismatch = check_topic("j", None, {0: 24}, state(high=5))
    assert mismatch is not None
    line = describe(mismatch, "orders", Path("/cp/orders"))
    assert "bridge orders: checkpoint mismatch on topic j: checkpoint /cp/orders" in line
    assert "or the broker lost records it had acknowledged" in line  # a topic's end that went back
    assert "jmsbridge reset-checkpoint" in line and "\n" not in line


def test_offsets_are_grouped_by_topic() -> None:
    def locate(k: str) -> tuple[str, int] | None:
        return None if k.startswith("/") else (k.rpartition(":")[0], int(k.rpartition(":")[2]))

    assert by_topic({"a:0": 1, "a:1": 2, "b:0": 3, "/a.*": 0}, locate) == {"a": {0: 1, 1: 2}, "b": {0: 3}}


def test_files_round_trip_and_sparks_offset_log_is_read(tmp_path: Path) -> None:
    assert spark_offsets(tmp_path) is None and load_binding(tmp_path) is None and load_start(tmp_path) is None
    save_binding(tmp_path, {"j": TopicBinding("x", {0: RECORD})})
    assert load_binding(tmp_path) == {"j": TopicBinding("x", {0: RECORD})}
    save_start(tmp_path, {"0": 4})
    assert load_start(tmp_path) == {"0": 4}
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0}\n{"0": 3}')
    (tmp_path / "offsets" / "11").write_text('v1\n{"batchWatermarkMs":0}\n{"0": 24}')
    (tmp_path / "offsets" / ".11.crc").write_text("")
    assert spark_offsets(tmp_path) == {"0": 24}


def test_the_reset_says_what_it_replays_or_skips() -> None:
    assert "replays 10" in describe_change("p", 20, 0, 30, 10)
    assert "skips 10" in describe_change("p", 20, 0, 30, 30)
    # the checkpoint's offset is not this topic's:
    assert "skips 0, reads 5" in describe_change("p", 24, 0, 5, 0)


def test_records_lost_are_counted_once_however_often_the_batch_is_planned(tmp_path: Path) -> None:
    assert count_lost(tmp_path, "j", {0: 2, 1: 9}, {0: 5, 1: 3}) == 3  # partition 0: 2..4 gone
    assert count_lost(tmp_path, "j", {0: 2, 1: 9}, {0: 5, 1: 3}) == 0  # planned again: nothing new
    assert count_lost(tmp_path, "j", {0: 2}, {0: 8}) == 3  # retention went on: 5..7
    assert count_lost(tmp_path, "t", {0: 0}, {0: 1}) == 1
    assert lost_totals(tmp_path) == {"j": 6, "t": 1}


def test_a_topic_id_the_broker_did_not_give_this_time_stays_bound() -> None:
    earlier = {"a": TopicBinding("id-a"), "b": TopicBinding("id-b")}
    taken = {"a": TopicBinding(None, {0: (5, 1, 2)}), "b": TopicBinding("id-b2"), "c": TopicBinding(None)}
    with_known_ids(taken, earlier)
    assert taken["a"] == TopicBinding("id-a", {0: (5, 1, 2)})  # a describe that timed out
    assert taken["b"].topic_id == "id-b2"  # an id the broker gave is the one bound
    assert taken["c"].topic_id is None
