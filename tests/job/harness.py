"""Running the real bridge job against real brokers: the job as a process, JMS in, Kafka out."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import Consumer, TopicPartition

from bridge_job.config import ConnectionFactorySpec, JmsSource, JmsSpec
from bridge_job.jms import JmsConnection, start_jvm
from bridge_job.message import JmsMessage
from tests.brokers import ActiveMqBroker, KafkaBroker, activemq_classpath, wait_until


def bridge_document(
    name: str, activemq: ActiveMqBroker, kafka: KafkaBroker, sources: list[dict[str, Any]], **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "jms": {
            "connectionFactory": {
                "className": "org.apache.activemq.ActiveMQConnectionFactory",
                "properties": {"brokerURL": f"failover:({activemq.url})?startupMaxReconnectAttempts=5"},
            },
            "classpath": activemq_classpath(),
            "sources": sources,
        },
        "kafka": {"bootstrapServers": kafka.bootstrap, "createJournalTopic": True},
        "spark": {"triggerIntervalMs": 100},
        "telemetry": {"port": 0},
    }
    for key, value in spec.items():
        body[key] = body.get(key, {}) | value if isinstance(value, dict) else value
    return {
        "apiVersion": "jmsbridge.dev/v1alpha1",
        "kind": "JmsBridge",
        "metadata": {"name": name},
        "spec": body,
    }


def route_document(name: str, bridge: str, topic: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "jmsbridge.dev/v1alpha1",
        "kind": "JmsBridgeRoute",
        "metadata": {"name": name},
        "spec": {"bridgeRef": {"name": bridge}, "kafkaTopic": topic, **spec},
    }


def write_yaml(path: Path, *documents: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


@dataclass
class BridgeJob:
    """`jmsbridge job` as a child process in its own process group (so a kill takes Spark with it)."""

    files: list[Path]
    work_dir: Path
    process: subprocess.Popen[bytes] | None = None
    logs: list[Path] = field(default_factory=list)

    def start(self) -> BridgeJob:
        log_path = self.work_dir / f"job-{len(self.logs)}.log"
        self.logs.append(log_path)
        argv = [sys.executable, "-m", "jmsbridge", "job", "--master", "local[2]"]
        argv += [f"--file={f}" for f in self.files]
        argv += [
            "--checkpoint", str(self.work_dir / "checkpoint"),
            "--work-dir", str(self.work_dir / "run"),
            "--metrics-port", "0",
        ]  # fmt: skip
        env = os.environ | {"PYSPARK_PYTHON": sys.executable}
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env
            )
        return self

    def log(self) -> str:
        return self.logs[-1].read_text(errors="replace") if self.logs else ""

    def wait_running(self, timeout: float = 120) -> None:
        def running() -> bool:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"job exited with {self.process.returncode}:\n{self.log()[-4000:]}")
            return " running: " in self.log()

        wait_until(running, timeout, "the bridge job to start", interval=0.2)

    def wait_exit(self, timeout: float = 180) -> int:
        assert self.process is not None
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"job still running after {timeout}s:\n{self.log()[-4000:]}") from None

    def kill(self) -> None:
        """A crash: SIGKILL the job and everything it started (Spark's JVM, Python workers)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=60)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()


def jms_connection(activemq: ActiveMqBroker) -> JmsConnection:
    start_jvm(activemq_classpath())
    spec = JmsSpec(
        connection_factory=ConnectionFactorySpec(
            class_name="org.apache.activemq.ActiveMQConnectionFactory", properties={"brokerURL": activemq.url}
        ),
        sources=[JmsSource(queue="unused")],
    )
    return JmsConnection(spec, client_id=f"test-{uuid.uuid4().hex[:8]}")


def send(activemq: ActiveMqBroker, messages: Iterable[JmsMessage]) -> list[str]:
    """Send with a real JMS producer; returns the JMSMessageIDs the broker acknowledged."""
    with jms_connection(activemq) as connection, connection.producer() as producer:
        return [producer.send(m) for m in messages]


@dataclass(frozen=True)
class Received:
    topic: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]

    def header(self, name: str) -> bytes | None:
        return dict(self.headers).get(name)


def read_topics(
    kafka: KafkaBroker, topics: Iterable[str], count: int, timeout: float = 120, settle: float = 0.0
) -> list[Received]:
    """Every record of `topics` once `count` arrived (then `settle` seconds more, to catch extras)."""
    consumer = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "group.id": f"test-{uuid.uuid4().hex}",
            "enable.auto.commit": "false",
            "isolation.level": "read_committed",
        }
    )
    names = list(topics)
    consumer.assign([TopicPartition(t, 0, 0) for t in names])
    received: list[Received] = []
    deadline = time.monotonic() + timeout
    settled_at: float | None = None
    try:
        while True:
            now = time.monotonic()
            if len(received) >= count:
                settled_at = settled_at or now + settle
                if now >= settled_at:
                    return received
            elif now > deadline:
                raise AssertionError(
                    f"{len(received)} of {count} records arrived in {names} within {timeout}s"
                )
            for message in consumer.consume(num_messages=10_000, timeout=0.5):
                if message.error() is None:
                    received.append(
                        Received(
                            message.topic() or "", message.key(), message.value(), message.headers() or []
                        )  # type: ignore[arg-type]
                    )
    finally:
        consumer.close()
