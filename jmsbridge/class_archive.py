"""A class-data archive for the Spark JVM of local runs (the demo, the tests, the benchmarks).

Each start of Spark's JVM loads and verifies the same ten thousand classes from its jars: about half the
CPU of a session's start. Java's dynamic class-data sharing (JEP 350) maps them from an archive instead:
a local session's start with one small query took 3.8 CPU-s instead of 7.4, and 3.4 s instead of 6.5
(2026-11-29, `-XX:TieredStopAtLevel=1` both times). The suite starts Spark about seventy times.

`scripts/setup.sh` makes the archive once (`python -m jmsbridge.class_archive`); `BridgeJob` passes it to
the job's JVM when it is there. An archive belongs to one JVM build and one Spark classpath, so its name
carries both; a JVM that cannot map it loads its classes the usual way (`-Xshare:auto`, Java's default),
which costs time and nothing else. The test Kafka broker maps an archive of its own the same way
(`jmsbridge.kafka_server`), made with the functions below.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from jmsbridge.cache import cache_dir

_CACHE = cache_dir("spark-classes")
# An archive (about 160 MB) that no run has mapped for this long belongs to a venv made again since: the
# next archive made removes it. Each run that maps one marks it used (its modification time).
UNUSED_DAYS = 7


def _java() -> Path | None:
    """The `java` that spark-submit runs: $JAVA_HOME's, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def keyed(directory: Path, prefix: str, java: Path, jars: Iterable[Path]) -> Path:
    """Where the archive of `java` for the classes of `jars` is (or would be): `<prefix>-<key>.jsa`.

    The JVM maps an archive only for the JVM build that wrote it and for jars of the same paths, sizes and
    modification times: a venv made again (a fresh checkout beside an old cache) needs its own.
    """
    files = [java, *(java.parent.parent / "lib" / "server").glob("*"), *jars]
    key = hashlib.sha256("\n".join(f"{f} {f.stat().st_size} {f.stat().st_mtime_ns}" for f in files).encode())
    return directory / f"{prefix}-{key.hexdigest()[:16]}.jsa"


def archive_path() -> Path | None:
    """Where this JVM's archive for this PySpark's jars is (or would be); None without a JVM."""
    import pyspark

    java = _java()
    if java is None:
        return None
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    return keyed(_CACHE, f"pyspark-{pyspark.__version__}", java, jars)


def mapping_option(path: Path | None) -> str:
    """The JVM option that maps the archive at `path`; empty when there is none."""
    if path is None or not path.is_file():
        return ""
    with contextlib.suppress(OSError):  # another user's cache: theirs to prune
        os.utime(path)  # used now: not pruned (`prune`)
    return f"-XX:SharedArchiveFile={path}"


def jvm_options() -> str:
    """The driver JVM's option that maps the archive; empty when there is none."""
    return mapping_option(archive_path())


def made(path: Path, dump: Callable[[Path], None]) -> Path:
    """The archive at `path`, made first when missing by `dump(partial)`, which runs a JVM that writes
    the classes it loaded to `partial` when it exits (`-XX:ArchiveClassesAtExit`).

    A lock keeps two processes (test workers) from dumping at once; the JVM writes to a temporary name,
    renamed when complete, so a half-written archive is never mapped.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.is_file():
            partial = path.with_suffix(".partial")
            partial.unlink(missing_ok=True)
            dump(partial)
            if not partial.is_file():
                raise RuntimeError(f"making {path}: the JVM wrote no archive")
            partial.rename(path)
            prune(path)
    return path


def ensure() -> Path | None:
    """Spark's archive, made first when missing: a local session runs one query and dumps what it loaded."""
    path = archive_path()
    return None if path is None else made(path, _dump_in_a_process)


def _dump_in_a_process(partial: Path) -> None:
    argv = [sys.executable, "-m", "jmsbridge.class_archive", "--dump", str(partial)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"making {partial} failed:\n{(done.stdout + done.stderr)[-3000:]}")


def prune(kept: Path, now: float | None = None) -> list[Path]:
    """Remove the archives of the same kind beside `kept` (the same name before its key) that no run mapped
    for UNUSED_DAYS; the ones removed."""
    cutoff = (time.time() if now is None else now) - UNUSED_DAYS * 86400
    removed = []
    kind = kept.name.split("-", 1)[0]  # "pyspark" of pyspark-4.2.0-<key>.jsa
    for old in kept.parent.glob(f"{kind}-*.jsa"):
        if old != kept and old.stat().st_mtime < cutoff:
            old.unlink(missing_ok=True)
            old.with_suffix(".lock").unlink(missing_ok=True)
            removed.append(old)
    return removed


def _dump(target: str) -> None:
    """Run a small local session whose JVM writes the classes it loaded to `target` when it exits."""
    from pyspark.sql import SparkSession

    from bridge_job.config.spark_settings import SPARK_SETTINGS

    builder = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    for name, value in SPARK_SETTINGS.items():
        builder = builder.config(name, value)
    # -Xlog:cds=error: the dump lists every class it skips (signed jars, old class files) as a warning.
    dump = f"-XX:ArchiveClassesAtExit={target} -Xlog:cds=error"
    options = f"{SPARK_SETTINGS['spark.driver.extraJavaOptions']} {dump}"
    spark = builder.config("spark.driver.extraJavaOptions", options).getOrCreate()
    spark.range(1000).selectExpr("id % 7 AS k").groupBy("k").count().collect()
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    process = gateway.proc  # the JVM PySpark launched
    spark.stop()
    # The JVM exits (and dumps) once its standard input closes: wait for it, or the archive is not there.
    process.stdin.close()
    process.wait(timeout=120)
    if not Path(target).is_file():
        raise SystemExit(f"class_archive: the JVM wrote no archive to {target}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--dump"]:
        _dump(sys.argv[2])
    else:
        print(ensure() or "class_archive: no java found, nothing made")
