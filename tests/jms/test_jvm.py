"""The process's one JVM: classpath globs, a clear error for what cannot be loaded, a clean exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bridge_job.jms import JmsError, start_jvm
from bridge_job.jms.jvm import expand_classpath
from testbed.brokers import ActiveMqBroker, activemq_classpath

REPO = Path(__file__).resolve().parents[2]


def test_globs_are_expanded() -> None:
    jars = expand_classpath(activemq_classpath())
    assert any(j.endswith("/activemq-client.jar") for j in jars)
    assert all("*" not in j for j in jars)


def test_entry_matching_nothing_is_an_error() -> None:
    with pytest.raises(JmsError, match=r"classpath entry '/nonexistent/\*\.jar' matches no file"):
        start_jvm(["/nonexistent/*.jar"])
    with pytest.raises(JmsError, match="the JMS classpath is empty"):
        start_jvm([])


def test_second_start_is_a_no_op_for_jars_already_loaded() -> None:
    start_jvm(activemq_classpath())
    start_jvm(["/usr/share/activemq/lib/activemq-client.jar"])


def test_second_start_with_other_jars_is_an_error(tmp_path: Path) -> None:
    extra = tmp_path / "other-provider.jar"
    extra.write_bytes(b"")
    with pytest.raises(JmsError, match=rf"the JVM is already running and its classpath lacks {extra}"):
        start_jvm([str(tmp_path / "*.jar")])


def run_python(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_missing_java_runtime_is_a_clear_error() -> None:
    result = run_python(
        """
        import jpype
        from bridge_job.jms import JmsError, start_jvm

        def no_jvm():
            raise jpype.JVMNotFoundException("No JVM shared library file (libjvm.so) found")

        jpype.getDefaultJVMPath = no_jvm
        try:
            start_jvm(["/usr/share/activemq/lib/*.jar"])
        except JmsError as error:
            print(error)
        """
    )
    assert "no Java runtime found (install Java 17 or set JAVA_HOME)" in result.stdout, result.stderr


def test_process_exits_with_a_connection_left_open(activemq: ActiveMqBroker) -> None:
    started = time.monotonic()
    result = run_python(
        f"""
        from bridge_job.config import JmsSource
        from bridge_job.jms import JmsConnection
        from testbed.brokers import activemq_classpath
        from testbed.jms import factory_spec

        connection = JmsConnection(factory_spec("{activemq.url}"), classpath=activemq_classpath())
        consumer = connection.consumer(JmsSource(queue="test.exit"))
        print("received", consumer.receive_batch(1, 10))
        """
    )
    assert result.returncode == 0, result.stderr
    assert "received []" in result.stdout
    assert time.monotonic() - started < 30
