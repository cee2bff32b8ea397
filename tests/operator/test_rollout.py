"""Safe rollouts and drift, decided from observed objects (pure)."""

from __future__ import annotations

import copy
from typing import Any

from jmsbridge_operator import naming
from jmsbridge_operator.condition_catalogue import ROLLING_OUT, ROLLING_OUT_WITH_GAP
from jmsbridge_operator.drift import application_drift, config_map_drift, stored_spec_hash
from jmsbridge_operator.rollout import Step, step, submission

P, S = "b-primary", "b-secondary"


def app(
    spec_hash: str, state: str = "RUNNING", submitted: str = "s1", replaced: str | None = None
) -> dict[str, Any]:
    annotations = {naming.ANNOTATION_SPEC_HASH: spec_hash}
    if replaced is not None:
        annotations[naming.ANNOTATION_REPLACED_SUBMISSION] = replaced
    return {
        "metadata": {"annotations": annotations},
        "spec": {"image": "job:1"},
        "status": {"applicationState": {"state": state}, "submissionID": submitted},
    }


NEW = {P: app("new"), S: app("new")}


def test_the_standby_goes_first_then_the_active_once_the_standby_runs_the_new_spec() -> None:
    first = step(NEW, {P: app("old"), S: app("old")}, P)
    assert first.replace == (S,) and first.progress is not None and first.progress.reason == ROLLING_OUT

    replaced = app("new", submitted="s1", replaced="s1")  # updated, its old submission still RUNNING
    assert step(NEW, {P: app("old"), S: replaced}, P).replace == ()
    resubmitted = app("new", state="SUBMITTED", submitted="s2", replaced="s1")
    assert step(NEW, {P: app("old"), S: resubmitted}, P).replace == ()
    running = app("new", submitted="s2", replaced="s1")
    assert step(NEW, {P: app("old"), S: running}, P).replace == (P,)

    done = step(NEW, {P: app("new", submitted="s2", replaced="s1"), S: running}, S)
    assert done == Step()


def test_whichever_is_active_waits_for_the_other() -> None:
    assert step(NEW, {P: app("old"), S: app("old")}, S).replace == (P,)
    assert step(NEW, {P: app("old"), S: app("old")}, None).replace == (S,)  # the first running is active


def test_nothing_running_means_nothing_to_protect() -> None:
    decided = step(NEW, {P: app("old", "FAILED"), S: app("old", "SUBMITTED")}, P)
    assert decided.replace == (P, S)


def test_a_single_instance_restarts_at_once_and_says_so() -> None:
    decided = step({P: app("new")}, {P: app("old")}, P)
    assert decided.replace == (P,)
    assert decided.progress is not None and decided.progress.reason == ROLLING_OUT_WITH_GAP
    waiting = step({P: app("new")}, {P: app("new", replaced="s1")}, P)
    assert waiting.replace == () and waiting.progress is not None  # still the old submission
    assert step({P: app("new")}, {P: app("new", submitted="s2", replaced="s1")}, P) == Step()


def test_submission_reads_the_spark_operators_identity_of_a_run() -> None:
    assert submission({}) == ""
    assert submission({"status": {"submissionID": "x", "lastSubmissionAttemptTime": "t"}}) == "x|t"


def test_drift_is_judged_by_the_stored_spec_when_noted_and_by_our_fields_otherwise() -> None:
    desired: dict[str, Any] = {"spec": {"image": "job:1", "driver": {"cores": 1}, "volumes": [{"name": "a"}]}}
    live = copy.deepcopy(desired)
    live["spec"]["volumes"][0]["defaulted"] = True  # a default filled in by the API server
    assert application_drift(live, desired) == []  # not noted: only our fields count
    live["metadata"] = {"annotations": {naming.ANNOTATION_STORED_SPEC_HASH: stored_spec_hash(live)}}
    assert application_drift(live, desired) == []
    live["spec"]["image"] = "evil:1"
    live["spec"]["driver"]["cores"] = 8
    assert application_drift(live, desired) == ["spec.image", "spec.driver.cores"]
    live["spec"] = {**copy.deepcopy(desired["spec"]), "volumes": live["spec"]["volumes"], "proxyUser": "x"}
    assert application_drift(live, desired) == ["spec.proxyUser"]


def test_config_map_drift_compares_the_data() -> None:
    desired = {"data": {"job.yaml": "a"}}
    assert not config_map_drift({"data": {"job.yaml": "a"}, "metadata": {"x": 1}}, desired)
    assert config_map_drift({"data": {"job.yaml": "b"}}, desired)


def test_a_new_spec_the_standby_fails_with_never_reaches_the_active() -> None:
    failing = app("new", state="FAILED", submitted="s2", replaced="s1")
    decided = step(NEW, {P: app("old"), S: failing}, P)
    assert decided.replace == ()
    assert decided.progress is not None and "waiting for b-secondary" in decided.progress.message
