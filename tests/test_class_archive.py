"""Spark's JVM in local runs maps the class-data archive that setup made (jmsbridge/class_archive.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jmsbridge import class_archive

SESSION = """
import sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.extraJavaOptions", sys.argv[1]).getOrCreate())
spark.range(3).count()
spark.stop()
"""


def test_the_option_names_the_archive_only_once_it_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(class_archive, "_CACHE", tmp_path)
    path = class_archive.archive_path()
    assert path is not None and path.parent == tmp_path
    assert class_archive.jvm_options() == ""  # a JVM given a missing archive says nothing and loads slowly
    path.write_bytes(b"")
    assert class_archive.jvm_options() == f"-XX:SharedArchiveFile={path}"


@pytest.mark.slow  # a Spark session, and making the archive first where setup did not (25 s)
def test_spark_s_jvm_loads_its_classes_from_the_archive(tmp_path: Path) -> None:
    assert class_archive.ensure() is not None
    loaded = tmp_path / "classes.log"
    options = f"{class_archive.jvm_options()} -Xlog:class+load=info:file={loaded}"
    subprocess.run([sys.executable, "-c", SESSION, options], check=True, capture_output=True, timeout=300)
    context = [line for line in loaded.read_text().splitlines() if " org.apache.spark.SparkContext " in line]
    assert context and "shared objects file (top)" in context[0], context
