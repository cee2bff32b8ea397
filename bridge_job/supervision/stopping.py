"""The one `jmsbridge stopped:` line out of any failure, however deep Spark wrapped it."""

from __future__ import annotations

from bridge_job.faults.stops import BridgeStopped, LeadershipLost


def stop_reason(error: BaseException) -> str:
    """The `jmsbridge stopped:` line out of an exception, however deep Spark wrapped it."""
    if jvm_gone(error):
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        return (
            f"Spark's JVM stopped answering ({first}): it died or was killed; its last lines above say why "
            "(an OutOfMemoryError: give the driver more memory, spec.spark.driver.memory)"
        )
    if (found := BridgeStopped.found_in(str(error))) is not None:
        return found.reason
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def stopped_by(error: BaseException) -> BridgeStopped | LeadershipLost:
    """What a query's `error` is: the hard failure a task raised, with its status reason, or the lost lease
    a planning or a task found, when Spark carried its text; else a hard failure whose reason is the
    error's `stop_reason`."""
    if not jvm_gone(error):
        text = str(error)
        if (failure := BridgeStopped.found_in(text)) is not None:
            return failure
        if (lost := LeadershipLost.found_in(text)) is not None:
            return lost
    return BridgeStopped(stop_reason(error))


def jvm_gone(error: BaseException) -> bool:
    """Whether py4j lost Spark's JVM (killed, or died of an OutOfMemoryError). A call the dying JVM answered
    with a bare error, no Java exception and no trace (`An error occurred while calling o98.isActive`), is
    that too: the gateway broke mid-call."""
    from py4j.protocol import Py4JError, Py4JJavaError, Py4JNetworkError  # type: ignore[import-untyped]

    if isinstance(error, Py4JNetworkError | ConnectionError | EOFError):
        return True
    bare = isinstance(error, Py4JError) and not isinstance(error, Py4JJavaError)
    return (
        bare
        and str(error).strip().startswith("An error occurred while calling")
        and "Trace:" not in str(error)
    )


def stopped_with_us(error: BaseException) -> str:
    """What a failure during a requested stop was, without the advice `stop_reason` gives for a crash."""
    if jvm_gone(error):
        return "Spark's JVM had stopped already (the signal reached it too)"
    return stop_reason(error)


def unforeseen_reason(error: BaseException) -> str:
    """The stop line of an error nothing caught. Once Spark's JVM is gone, the cleanup after a hard failure
    fails too, and its error hides the failure it interrupted: that one is the reason."""
    interrupted = interrupted_stop(error)
    return interrupted.reason if isinstance(interrupted, BridgeStopped) else stop_reason(error)


def interrupted_stop(error: BaseException) -> BridgeStopped | LeadershipLost | None:
    """The stop a cleanup's `error` interrupted, if any: a hard failure, or a lost lease (after which a
    fenced producer's flush fails too)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, BridgeStopped | LeadershipLost):
            return seen
        seen = seen.__context__
    return None
