"""The stop line out of py4j's errors: a JVM that went mid-call is named as such, a Java failure is not;
and a cleanup that fails after a stop does not hide the stop."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException
from py4j.protocol import Py4JError, Py4JNetworkError  # type: ignore[import-untyped]

from bridge_job.faults.stops import BridgeStopped, LeadershipLost
from bridge_job.supervision.stopping import (
    interrupted_stop,
    jvm_gone,
    stop_reason,
    stopped_by,
    unforeseen_reason,
)


def test_a_call_the_dying_jvm_answered_with_a_bare_error_means_the_jvm_is_gone() -> None:
    bare = Py4JError("An error occurred while calling o98.isActive")
    assert jvm_gone(bare)
    assert stop_reason(bare).startswith("Spark's JVM stopped answering (An error occurred while calling o98")
    assert jvm_gone(Py4JNetworkError("Answer from Java side is empty"))


def test_an_error_the_jvm_explained_is_no_lost_jvm() -> None:
    traced = Py4JError(
        "An error occurred while calling o98.foo. Trace:\npy4j.Py4JException: no such method\n"
    )
    assert not jvm_gone(traced)
    assert not jvm_gone(ValueError("An error occurred while calling o98.isActive"))


def _during(cleanup_error: BaseException, stop: BaseException) -> BaseException:
    """`cleanup_error` as Python raises it from a `finally` that ran while `stop` was raised."""
    try:
        try:
            raise stop
        finally:
            raise cleanup_error
    except BaseException as raised:
        return raised


def _fenced() -> KafkaException:
    return KafkaException(KafkaError(KafkaError._FENCED, "Failed to end transaction", fatal=True))


def test_a_cleanup_that_fails_after_a_stop_does_not_hide_it() -> None:
    lost = LeadershipLost("no renewal succeeded for 6.67s")
    assert interrupted_stop(_during(_fenced(), lost)) is lost  # the zombie's exit: a lost lease, not exit 2
    hard = BridgeStopped("topic t does not exist: create it or fix the route")
    assert unforeseen_reason(_during(RuntimeError("JVM gone"), hard)) == hard.reason
    assert interrupted_stop(_fenced()) is None
    assert unforeseen_reason(_fenced()).startswith("KafkaError{FATAL,code=_FENCED")


def test_a_lost_lease_that_spark_wrapped_stays_a_lost_lease() -> None:
    """A planning that found its tenure over fails its query: the driver exits as a lost lease (3, restart
    as the standby), not as a hard failure (2)."""
    lost = LeadershipLost("the tenure of a (lease acquired t) is over")
    wrapped = Py4JError(
        "An error occurred while calling o41.awaitTermination. Trace:\n"
        "org.apache.spark.sql.streaming.StreamingQueryException: [STREAM_FAILED] Query [id = 1] "
        f"terminated with exception: {lost}\n\tat org.apache.spark.sql.execution.streaming.Stream..."
    )
    found = stopped_by(wrapped)
    assert isinstance(found, LeadershipLost) and found.reason == lost.reason
    hard = BridgeStopped("topic t does not exist", "TopicMissing")
    assert isinstance(stopped_by(Py4JError(f"Trace:\n{hard}\n{lost}")), BridgeStopped)  # a failure first
    plain = stopped_by(ValueError("boom"))
    assert isinstance(plain, BridgeStopped) and plain.reason == "boom"
