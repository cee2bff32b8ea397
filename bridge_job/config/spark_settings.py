"""The Spark settings of every bridge job: one list, applied by the job's session and rendered by the
operator into the SparkApplication (where settings such as dynamic allocation must be known at submit).

There is no shuffle in the bridge's query, so no shuffle-partition setting: parallelism follows the
journal's partitions.
"""

from __future__ import annotations

from collections.abc import Mapping

SPARK_SETTINGS: dict[str, str] = {
    # A speculative copy of an egress task would write its journal range twice.
    "spark.speculation": "false",
    # A bridge runs a fixed set of executors; scaling them down would drop their Kafka producers.
    "spark.dynamicAllocation.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.metricsEnabled": "true",
    # Python workers, and with them their Kafka clients and parsed config, live across micro-batches.
    "spark.python.worker.reuse": "true",
    # The JVMs only plan, schedule and checkpoint (records stay in Python): code that never gets hot
    # enough to repay C2's compilation, which took most of the driver JVM's CPU for minutes after start.
    # C1 alone roughly halved the JVM's CPU per batch (docs/egress.md, "Cost per batch").
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1",
}

# A bridge's own `spark.sparkConf` may add JVM options: they are appended to ours (the JVM takes the last
# of two conflicting flags, so a bridge can re-tune the JIT). Every other key above is the job's.
MERGED_SETTINGS = frozenset({"spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"})
OWNED_SETTINGS = frozenset(SPARK_SETTINGS) - MERGED_SETTINGS


def merged_settings(given: Mapping[str, str]) -> dict[str, str]:
    """The job's settings with a bridge's own (`spark.sparkConf`, which has no key of OWNED_SETTINGS)."""
    merged = {**given, **SPARK_SETTINGS}
    for key in MERGED_SETTINGS:
        if given.get(key):
            merged[key] = f"{SPARK_SETTINGS[key]} {given[key]}"
    return merged


def session_settings(submitted: Mapping[str, str]) -> dict[str, str]:
    """What the job's session sets over the settings it was submitted with: ours, JVM options merged.

    Under the spark-operator, spark-submit already holds the rendered `merged_settings`; the session must
    not put our bare JVM options over a bridge's own (executors are launched with the driver's settings).
    """
    settings = dict(SPARK_SETTINGS)
    for key in MERGED_SETTINGS:
        given = submitted.get(key, "")
        if SPARK_SETTINGS[key] in given.split():
            settings[key] = given
        elif given:
            settings[key] = f"{SPARK_SETTINGS[key]} {given}"
    return settings
