"""The Spark settings of every bridge job: one list, applied by the job's session and rendered by the
operator into the SparkApplication (where settings such as dynamic allocation must be known at submit).

There is no shuffle in the bridge's query, so no shuffle-partition setting: parallelism follows the
journal's partitions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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
    # Spark's RPC (driver <-> executors: tasks, their results, the live-figure keys of spark/live.py) only
    # between the job's own JVMs, encrypted: without, anyone on the pod network could join as an executor
    # or read what the tasks carry. On Kubernetes Spark makes a secret per application and gives it to the
    # executors in their environment (docs/security.md: who can read pods can read it).
    "spark.authenticate": "true",
    "spark.network.crypto.enabled": "true",
}

# A bridge's own `spark.sparkConf` may add JVM options: they are appended to ours (the JVM takes the last
# of two conflicting flags, so a bridge can re-tune the JIT). Every other key above is the job's.
MERGED_SETTINGS = frozenset({"spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"})
OWNED_SETTINGS = frozenset(SPARK_SETTINGS) - MERGED_SETTINGS

# What a bridge's `spark.sparkConf` cannot set, by prefix: settings that choose where the job runs and as
# whom, with which credentials, images and submission (Spark's "Running on Kubernetes" and "Security"
# pages), and the RPC authentication the operator sets up. spark-submit keeps the last value of a key, so
# one of these in sparkConf would override what the operator rendered. Each says what to use instead.
REFUSED_PREFIXES: dict[str, str] = {
    "spark.kubernetes.": "the namespace, service account, API credentials, images and pods are the "
    "operator's: use spec.spark.image, spec.spark.serviceAccount and spec.spark.pod",
    "spark.authenticate": "Spark's RPC authentication is the operator's",
    "spark.network.crypto.": "Spark's RPC encryption is the operator's",
    "spark.master": "the operator submits the job to its own cluster",
    "spark.submit.": "the operator submits the job",
    "spark.driver.host": "the operator's driver service is the address executors reach",
}
# A JVM option `-Dspark.x=y` is a Spark setting by the back door (SparkConf reads `spark.*` system
# properties): refused in extraJavaOptions, whatever its name.
SPARK_PROPERTY_OPTION = "-Dspark."


def refused_setting(key: str, value: str) -> str | None:
    """Why a bridge's sparkConf entry cannot be taken, if it cannot."""
    if key in OWNED_SETTINGS:
        return f"sparkConf cannot set {key}: the bridge job needs its value"
    for prefix, why in REFUSED_PREFIXES.items():
        if key.startswith(prefix):
            return f"sparkConf cannot set {key}: {why}"
    if key in MERGED_SETTINGS and SPARK_PROPERTY_OPTION in value:
        option = f"{SPARK_PROPERTY_OPTION}<name>=..."
        return f"sparkConf {key} cannot set Spark settings ({option}): set them in sparkConf itself"
    return None


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


def with_command_line(settings: Mapping[str, str], given: Iterable[tuple[str, str]]) -> dict[str, str]:
    """`settings` with `jmsbridge job --conf` entries over them; JVM options are added to the job's (a
    local run's class-data archive must not drop the job's JIT setting)."""
    result = dict(settings)
    for key, value in given:
        result[key] = f"{result[key]} {value}" if key in MERGED_SETTINGS and result.get(key) else value
    return result
