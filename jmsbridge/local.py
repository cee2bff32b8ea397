"""Local brokers for the demo, the benchmarks and the tests: each on a free loopback port, stopped by PID.

- `KafkaBroker` (in `jmsbridge.kafka_server`): Apache Kafka, one KRaft node.
- `ActiveMqBroker`: Debian's ActiveMQ Classic 5.17, OpenWire; JMS clients reach it through JPype.
- `NatsServer`: Debian's nats-server 2.9, core NATS and, when asked, JetStream.

Readiness is a condition (the port answers, the broker says it started), never a fixed sleep.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from jmsbridge import class_archive
from jmsbridge.certificates import JavaTls

if TYPE_CHECKING:
    from bridge_job.jms import JmsConnection

ACTIVEMQ_HOME = Path("/usr/share/activemq")
NATS_SERVER = Path("/usr/sbin/nats-server")  # where Debian puts it: not on every user's PATH


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_until(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def kill_group(process: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """SIGKILL a process started in a session of its own, and everything it started."""
    if process is not None and process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)


def stop_group(process: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """SIGTERM the process group; SIGKILL it when it has not exited within `timeout` seconds."""
    if process is not None and process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(process, timeout)


class _Process:
    """A server process in its own session, so that stop() takes its children with it."""

    name = "server"

    def __init__(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix=f"jmsbridge-{self.name}-"))
        self.log_path = self.workdir / "server.log"
        self.process: subprocess.Popen[bytes] | None = None

    def _spawn(self, argv: list[str], env: dict[str, str] | None = None, append: bool = False) -> None:
        log = open(self.log_path, "ab" if append else "wb")  # noqa: SIM115 - the child owns it
        self.process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir, start_new_session=True, env=env
        )
        log.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _check_alive(self) -> bool:
        if not self.alive():
            raise RuntimeError(f"{self.name} exited early:\n{self.log()[-3000:]}")
        return True

    def kill(self) -> None:
        """SIGKILL the whole process group (a crash, for failure tests)."""
        kill_group(self.process, 30)

    def freeze(self) -> None:
        """SIGSTOP the process group: a blackhole (the kernel still accepts connections, nobody answers:
        what a network partition looks like to a client, timeouts rather than refusals)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT what `freeze` stopped: the same process answers again, with what it had."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        self.thaw()  # a frozen process cannot handle SIGTERM
        stop_group(self.process, 20)

    def cleanup(self) -> None:
        """Kill the server and delete its files: what it would save by a graceful stop goes with them, and
        a server that takes its time over SIGTERM (with clients still connected) held a test session's
        end for the 20 s `stop` allows."""
        self.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)


INACTIVITY_MS = 10_000


class ActiveMqBroker(_Process):
    """ActiveMQ Classic with persistence on (messages survive a bridge crash as they would in production)."""

    name = "activemq"

    def __init__(
        self,
        port: int | None = None,
        persistent: bool = True,
        stomp: bool = False,
        tls: JavaTls | None = None,
    ) -> None:
        super().__init__()
        self.port = port or free_port()
        self.persistent = persistent
        self.stomp_port = free_port() if stomp else None  # a STOMP connector too (other protocols' clients)
        # An ssl:// connector too, asking clients for a certificate its trust store's CA signed
        self.tls = tls
        self.tls_port = free_port() if tls else None

    @property
    def tls_url(self) -> str:
        return f"ssl://127.0.0.1:{self.tls_port}"

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def credentials(self) -> tuple[str, str] | None:
        return None  # anyone may connect

    def start(self) -> ActiveMqBroker:
        if not (ACTIVEMQ_HOME / "bin" / "activemq.jar").exists():
            raise RuntimeError("ActiveMQ is not installed: run scripts/setup.sh (apt-get install activemq)")
        base = self.workdir
        (base / "conf").mkdir(exist_ok=True)
        (base / "data").mkdir(exist_ok=True)
        persistent = "true" if self.persistent else "false"
        # A short inactivity timeout, as docs/failover.md advises for a bridge with a standby: a frozen
        # client's connection is dropped after 10 s, and the messages it held go to the next consumer
        # (at the default 30 s, a frozen active's held the failover scenario for about a minute).
        connector = f"tcp://127.0.0.1:{self.port}?wireFormat.maxInactivityDuration={INACTIVITY_MS}"
        if self.stomp_port is not None:
            connector += f",stomp://127.0.0.1:{self.stomp_port}"
        if self.tls is not None:
            connector += f",{self.tls_url}?transport.needClientAuth=true"
        uri = (
            f"broker:({connector})?persistent={persistent}&useJmx=false"
            f"&brokerName=test{self.port}&dataDirectory={base / 'data'}"
        )
        self._spawn(
            [
                "java", "-Xmx512m", "-Djava.awt.headless=true",
                f"-Dactivemq.home={ACTIVEMQ_HOME}", f"-Dactivemq.base={base}",
                f"-Dactivemq.conf={base / 'conf'}", f"-Dactivemq.data={base / 'data'}",
                *self._tls_options(),
                "-jar", str(ACTIVEMQ_HOME / "bin" / "activemq.jar"), "start", uri,
            ]
        )  # fmt: skip
        wait_until(lambda: self._check_alive() and port_open(self.port), 90, f"ActiveMQ on {self.url}")
        return self

    def _tls_options(self) -> list[str]:
        """The broker JVM's default SSL context, which its ssl:// connector uses."""
        if self.tls is None:
            return []
        return [
            f"-Djavax.net.ssl.keyStore={self.tls.key_store}",
            f"-Djavax.net.ssl.keyStorePassword={self.tls.password}",
            f"-Djavax.net.ssl.trustStore={self.tls.trust_store}",
            f"-Djavax.net.ssl.trustStorePassword={self.tls.password}",
        ]


class NatsServer(_Process):
    """nats-server with its defaults (max_payload included), on loopback. With `jetstream`, its store is in
    the work dir: a restart keeps the streams, `cleanup()` removes them.

    `start()` again after `stop()` or `kill()` serves the same port, so clients reconnect to it; the log is
    then the new run's."""

    name = "nats"

    def __init__(self, port: int | None = None, jetstream: bool = False, args: Sequence[str] = ()) -> None:
        super().__init__()
        self.port = port or free_port()
        self.jetstream = jetstream
        self.args = list(args)  # more nats-server options (TLS: --tls, --tlscert, ...)
        self.store_dir = self.workdir / "store"  # the server keeps its streams in store/jetstream

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> NatsServer:
        binary = shutil.which("nats-server") or str(NATS_SERVER)
        if not Path(binary).exists():
            raise RuntimeError(
                "nats-server is not installed: run scripts/setup.sh (apt-get install nats-server)"
            )
        argv = [binary, "-a", "127.0.0.1", "-p", str(self.port)]
        if self.jetstream:
            argv += ["-js", "-sd", str(self.store_dir)]
        argv += self.args
        self._spawn(argv)
        wait_until(
            lambda: self._check_alive() and port_open(self.port),
            20,
            f"NATS on {self.url} (its log: {self.log_path})",
        )
        return self


class JmsBroker(Protocol):
    """A local JMS broker: ActiveMQ Classic here, or ActiveMQ Artemis (artemis_server.py)."""

    @property
    def url(self) -> str: ...

    def credentials(self) -> tuple[str, str] | None: ...


def jms_connection(broker: JmsBroker, client_id: str | None = None) -> JmsConnection:
    """A JMS connection to a local broker through the bridge's own adapter (JPype) with ActiveMQ Classic's
    OpenWire client, logged in when the broker requires it (Artemis speaks OpenWire too)."""
    import uuid

    from bridge_job.config import ConnectionFactorySpec, JmsSource, JmsSpec
    from bridge_job.jms import JmsConnection, start_jvm

    start_jvm(activemq_classpath())
    spec = JmsSpec(
        connection_factory=ConnectionFactorySpec(
            class_name="org.apache.activemq.ActiveMQConnectionFactory", properties={"brokerURL": broker.url}
        ),
        sources=[JmsSource(queue="unused")],  # a JmsSpec needs one; this connection only sends
    )
    client_id = client_id or f"local-{uuid.uuid4().hex[:8]}"
    return JmsConnection(spec, credentials=broker.credentials(), client_id=client_id)


class JmsRequester:
    """A JMS application written against the plain javax.jms API (ActiveMQ's client through JPype): its
    own connection and TemporaryQueue, requests with JMSReplyTo and JMSCorrelationID."""

    def __init__(self, broker: JmsBroker, queue: str) -> None:
        import jpype

        from bridge_job.jms import start_jvm

        start_jvm(activemq_classpath())
        factory = jpype.JClass("org.apache.activemq.ActiveMQConnectionFactory")(broker.url)
        self.connection: Any = factory.createConnection(*(broker.credentials() or ()))
        self.connection.start()
        auto_acknowledge = jpype.JClass("javax.jms.Session").AUTO_ACKNOWLEDGE
        self.session: Any = self.connection.createSession(False, auto_acknowledge)
        self.replies = self.session.createTemporaryQueue()
        self.consumer = self.session.createConsumer(self.replies)
        self.producer = self.session.createProducer(self.session.createQueue(queue))

    def request(self, text: str, correlation_id: str, properties: dict[str, str] | None = None) -> str:
        """Sends a request; returns its JMSMessageID (what a requester of the message-id convention expects
        back as the reply's JMSCorrelationID)."""
        message = self.session.createTextMessage(text)
        message.setJMSReplyTo(self.replies)
        message.setJMSCorrelationID(correlation_id)
        for name, value in (properties or {}).items():
            message.setStringProperty(name, value)
        self.producer.send(message)
        return str(message.getJMSMessageID())

    def reply(self, timeout_ms: int = 120_000) -> tuple[str, str]:
        """The next reply's JMSCorrelationID and text."""
        message = self.consumer.receive(timeout_ms)
        if message is None:
            raise TimeoutError(f"no reply on {self.replies} within {timeout_ms} ms")
        return str(message.getJMSCorrelationID()), str(message.getText())

    def close(self) -> None:
        self.connection.close()


def activemq_classpath() -> list[str]:
    """The ActiveMQ client jars that Debian ships (what `jms.classpath` points at on this machine)."""
    return [str(ACTIVEMQ_HOME / "lib" / "*.jar")]


@dataclass
class BridgeJob:
    """`jmsbridge job` as a child process in its own process group (so a kill takes Spark with it).

    The checkpoint is `work_dir/checkpoint`: two instances (`instance`) of one work dir share it, as the
    shared volume of an active/standby pair would give them. Spark's JVM maps the class-data archive of
    `jmsbridge.class_archive` when setup made one (it starts in half the CPU).
    """

    files: list[Path]
    work_dir: Path
    metrics_port: int = 0
    instance: str | None = None
    master: str = "local[8]"  # real-time mode runs a task per partition side by side
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)  # more `jmsbridge job` options, e.g. --cold-standby
    process: subprocess.Popen[bytes] | None = None
    logs: list[Path] = field(default_factory=list)

    def start(self) -> BridgeJob:
        name = f"job-{self.instance}" if self.instance else "job"
        log_path = self.work_dir / f"{name}-{len(self.logs)}.log"
        self.logs.append(log_path)
        argv = [sys.executable, "-m", "jmsbridge", "job", "--master", self.master]
        argv += [f"--filename={f}" for f in self.files]
        argv += [
            "--checkpoint", str(self.work_dir / "checkpoint"),
            "--work-dir", str(self.work_dir / (f"run-{self.instance}" if self.instance else "run")),
            "--metrics-port", str(self.metrics_port),
        ]  # fmt: skip
        if self.instance:
            argv += ["--instance", self.instance]
        if archive := class_archive.jvm_options():
            argv += ["--conf", f"spark.driver.extraJavaOptions={archive}"]
        argv += self.args
        env = os.environ | {"PYSPARK_PYTHON": sys.executable} | self.env
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env
            )
        return self

    def log(self) -> str:
        return self.logs[-1].read_text(errors="replace") if self.logs else ""

    def wait_running(self, timeout: float = 120) -> None:
        self.wait_log(" running: ", timeout)

    def wait_log(self, text: str, timeout: float = 120) -> None:
        """Until the log says `text`; an exit before that fails with the log's end."""

        def logged() -> bool:
            if text in self.log():
                return True
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"job exited with {self.process.returncode}:\n{self.log()[-4000:]}")
            return False

        wait_until(logged, timeout, f"{text!r} in the job's log", interval=0.2)

    def wait_exit(self, timeout: float = 180) -> int:
        assert self.process is not None
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"job still running after {timeout}s:\n{self.log()[-4000:]}") from None

    def kill(self) -> None:
        """A crash: SIGKILL the job and everything it started (Spark's JVM, Python workers)."""
        kill_group(self.process, 60)

    def stop(self) -> None:
        stop_group(self.process, 60)
