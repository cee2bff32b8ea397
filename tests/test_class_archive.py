"""Spark's JVM in local runs, and the test Kafka brokers' JVM, map the class-data archives that setup made
(jmsbridge/class_archive.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jmsbridge import class_archive
from jmsbridge.kafka_server import KafkaBroker, class_archive_path, ensure_class_archive

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


def test_a_venv_made_again_gets_an_archive_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The JVM refuses, silently, an archive whose jars changed size or time since it was written: a fresh
    checkout's venv beside an old cache, at the same path, must not be handed the old one."""
    import pyspark

    jars = tmp_path / "pyspark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"jar")
    monkeypatch.setattr(pyspark, "__file__", str(tmp_path / "pyspark" / "__init__.py"))
    first = class_archive.archive_path()
    assert first is not None and class_archive.archive_path() == first
    os.utime(jars / "spark-core.jar", ns=(1, 1))  # pip installing the same wheel again
    assert class_archive.archive_path() != first


def test_archives_no_run_mapped_for_a_week_go_when_a_new_one_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(class_archive, "_CACHE", tmp_path)
    current = class_archive.archive_path()
    assert current is not None
    current.write_bytes(b"")
    week = class_archive.UNUSED_DAYS * 86400
    stale, recent = tmp_path / "pyspark-4.2.0-aaaa.jsa", tmp_path / "pyspark-4.2.0-bbbb.jsa"
    for path, age in ((stale, week + 60), (recent, week - 60), (current, week + 60)):
        path.write_bytes(b"")
        os.utime(path, (time.time() - age, time.time() - age))
    class_archive.jvm_options()  # a run maps this venv's archive: used now
    assert class_archive.prune(recent) == [stale]  # another venv made `recent`
    assert sorted(tmp_path.glob("*.jsa")) == sorted([current, recent])


@pytest.mark.slow  # a Spark session, and making the archive first where setup did not (25 s)
def test_spark_s_jvm_loads_its_classes_from_the_archive(tmp_path: Path) -> None:
    assert class_archive.ensure() is not None
    loaded = tmp_path / "classes.log"
    options = f"{class_archive.jvm_options()} -Xlog:class+load=info:file={loaded}"
    subprocess.run([sys.executable, "-c", SESSION, options], check=True, capture_output=True, timeout=300)
    context = [line for line in loaded.read_text().splitlines() if " org.apache.spark.SparkContext " in line]
    assert context and "shared objects file (top)" in context[0], context


@pytest.mark.slow  # a broker of its own, and making the archive first where setup did not (15 s)
def test_kafka_s_jvm_loads_its_classes_from_the_archive(tmp_path: Path) -> None:
    archive = ensure_class_archive()
    assert archive is not None
    loaded = tmp_path / "classes.log"
    broker = KafkaBroker(
        classes=[class_archive.mapping_option(archive), f"-Xlog:class+load=info:file={loaded}"]
    )
    try:
        broker.start()
    finally:
        broker.cleanup()
    main = [line for line in loaded.read_text().splitlines() if " kafka.Kafka " in line]
    assert main and "shared objects file (top)" in main[0], main
    # Every other broker maps it by default: a broker's JVM as `start` runs it.
    assert class_archive_path() == archive and f"-XX:SharedArchiveFile={archive}" in broker._java(
        "kafka.Kafka"
    )
