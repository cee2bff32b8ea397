"""The job session's Spark settings over what spark-submit was given."""

from __future__ import annotations

from bridge_job.config.spark_settings import SPARK_SETTINGS, merged_settings, session_settings

EXECUTOR_OPTIONS = "spark.executor.extraJavaOptions"


def test_a_bridge_s_own_jvm_options_survive_the_session() -> None:
    # The operator renders the merged options into the SparkApplication; spark-submit hands them over.
    submitted = merged_settings({EXECUTOR_OPTIONS: "-Dbridge.flag=1"})
    assert session_settings(submitted)[EXECUTOR_OPTIONS] == "-XX:TieredStopAtLevel=1 -Dbridge.flag=1"
    # Given by other means (spark-submit --conf), they are merged the same way.
    assert session_settings({EXECUTOR_OPTIONS: "-Dx=2"})[EXECUTOR_OPTIONS] == "-XX:TieredStopAtLevel=1 -Dx=2"


def test_without_submitted_settings_the_session_sets_the_job_s() -> None:
    assert session_settings({}) == SPARK_SETTINGS
    assert session_settings({"spark.speculation": "true"})["spark.speculation"] == "false"
