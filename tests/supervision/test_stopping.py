"""The stop line out of py4j's errors: a JVM that went mid-call is named as such, a Java failure is not."""

from __future__ import annotations

from py4j.protocol import Py4JError, Py4JNetworkError  # type: ignore[import-untyped]

from bridge_job.supervision.stopping import jvm_gone, stop_reason


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
