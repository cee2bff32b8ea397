"""The job session's Spark settings over what spark-submit was given."""

from __future__ import annotations

from bridge_job.config.spark_settings import (
    SPARK_SETTINGS,
    merged_settings,
    session_settings,
    with_command_line,
)

EXECUTOR_OPTIONS = "spark.executor.extraJavaOptions"
DRIVER_OPTIONS = "spark.driver.extraJavaOptions"


def test_a_bridge_s_own_jvm_options_survive_the_session() -> None:
    # The operator renders the merged options into the SparkApplication; spark-submit hands them over.
    submitted = merged_settings({EXECUTOR_OPTIONS: "-Dbridge.flag=1"})
    assert session_settings(submitted)[EXECUTOR_OPTIONS] == "-XX:TieredStopAtLevel=1 -Dbridge.flag=1"
    # Given by other means (spark-submit --conf), they are merged the same way.
    assert session_settings({EXECUTOR_OPTIONS: "-Dx=2"})[EXECUTOR_OPTIONS] == "-XX:TieredStopAtLevel=1 -Dx=2"


def test_without_submitted_settings_the_session_sets_the_job_s() -> None:
    assert session_settings({}) == SPARK_SETTINGS
    assert session_settings({"spark.speculation": "true"})["spark.speculation"] == "false"


def test_the_command_line_adds_jvm_options_and_sets_the_rest() -> None:
    given = [(DRIVER_OPTIONS, "-XX:SharedArchiveFile=a.jsa"), ("spark.sql.shuffle.partitions", "3")]
    settings = with_command_line(SPARK_SETTINGS, given)
    assert settings[DRIVER_OPTIONS] == "-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile=a.jsa"
    assert settings["spark.sql.shuffle.partitions"] == "3"
    assert settings[EXECUTOR_OPTIONS] == SPARK_SETTINGS[EXECUTOR_OPTIONS]
    # Any other setting of the job's may be replaced from the command line (a local run's choice).
    assert with_command_line(SPARK_SETTINGS, [("spark.speculation", "true")])["spark.speculation"] == "true"
