"""The checkpoint reset's bookkeeping and the records lost, as the operator decides them (pure); the
whole path through kopf is in test_operator.py (the CheckpointMismatch test)."""

from __future__ import annotations

from typing import Any

from jmsbridge_operator.checkpoint_reset import DONE, REQUESTED, decide
from jmsbridge_operator.job_health import LostReport, ResetReport

NOW = "2026-11-24T21:00:00Z"
LATER = "2026-11-24T21:05:00Z"


def annotated(position: str | None) -> dict[str, Any]:
    annotations = {} if position is None else {"jmsbridge.dev/reset-checkpoint": position}
    return {"metadata": {"name": "orders", "annotations": annotations}}


def test_a_request_is_taken_once_then_done_when_the_job_says_so() -> None:
    taken = decide(annotated("earliest"), None, [], [], NOW)
    assert taken.reset is not None and (taken.reset.to, taken.reset.id, taken.reset.state) == (
        "earliest",
        NOW,
        REQUESTED,
    )
    assert [n.reason for n in taken.notices] == ["CheckpointReset"] and not taken.clear_annotation
    status = {"checkpointReset": taken.reset.dump()}

    waiting = decide(
        annotated("earliest"), status, [ResetReport("primary", "older", "latest", "x")], [], LATER
    )
    assert waiting.reset == taken.reset and waiting.notices == ()  # the same request: same id, no Event

    summary = "topic j partition 0: ... (replays 7 records)"
    done = decide(
        annotated("earliest"), status, [ResetReport("primary", NOW, "earliest", summary)], [], LATER
    )
    assert done.reset is not None and done.reset.state == DONE and done.reset.summary == summary
    assert done.clear_annotation
    assert [n.message for n in done.notices] == [
        f"Checkpoint reset to earliest by instance primary: {summary}"
    ]

    after = decide(annotated(None), {"checkpointReset": done.reset.dump()}, [], [], LATER)
    assert after.reset == done.reset and after.notices == () and not after.clear_annotation
    again = decide(annotated("latest"), {"checkpointReset": done.reset.dump()}, [], [], LATER)
    assert again.reset is not None and (again.reset.id, again.reset.state) == (LATER, REQUESTED)


def test_records_lost_are_one_warning_per_increase() -> None:
    first = decide(annotated(None), None, [], [LostReport("primary", {"j": 4})], NOW)
    assert first.records_lost == {"j": 4}
    assert [(n.type, n.reason) for n in first.notices] == [("Warning", "RecordsLost")]
    assert first.notices[0].message.startswith("4 records of topic j left it (retention) before the bridge")

    status = {"recordsLost": first.records_lost}
    # both instances of a pair read the tally of the checkpoint they share: the larger counts
    same = decide(
        annotated(None), status, [], [LostReport("primary", {"j": 4}), LostReport("secondary", {"j": 3})], NOW
    )
    assert same.records_lost == {"j": 4} and same.notices == ()
    more = decide(annotated(None), status, [], [LostReport("secondary", {"j": 6})], NOW)
    assert more.records_lost == {"j": 6} and "2 records of topic j" in more.notices[0].message
    assert decide(annotated(None), status, [], [], NOW).records_lost == {"j": 4}  # kept when nobody reports
