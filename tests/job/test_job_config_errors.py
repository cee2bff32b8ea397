"""`jmsbridge job` refuses invalid YAML before it starts, naming the file, the field and the problem."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bridge_job.config import ConfigError
from bridge_job.loading import load_job_config

BRIDGE = """\
apiVersion: jmsbridge.dev/v1alpha1
kind: JmsBridge
metadata: {name: orders}
spec:
  jms:
    connectionFactory: {className: org.apache.activemq.ActiveMQConnectionFactory}
    sources: [{queue: orders.in}]
  kafka: {bootstrapServers: "127.0.0.1:9092"}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def problems(*paths: Path) -> str:
    with pytest.raises(ConfigError) as error:
        load_job_config(list(paths))
    return str(error.value)


def test_every_problem_is_reported_with_file_and_field(tmp_path: Path) -> None:
    bridge = write(
        tmp_path, "bridge.yaml", BRIDGE.replace('bootstrapServers: "127.0.0.1:9092"', "bootstrap: x")
    )
    routes = write(
        tmp_path,
        "routes.yaml",
        "apiVersion: jmsbridge.dev/v1alpha1\nkind: JmsBridgeRoute\nmetadata: {name: r}\n"
        "spec: {bridgeRef: {name: orders}, kafkaTopic: 'bad topic!', format: xml}\n",
    )
    text = problems(bridge, routes)
    assert f"{bridge}: spec.kafka.bootstrapServers: Field required" in text
    assert f"{bridge}: spec.kafka.bootstrap: Extra inputs are not permitted" in text
    assert f"{routes}: spec.kafkaTopic: String should match pattern" in text
    assert f"{routes}: spec.format: Input should be 'native', 'basic', 'json' or 'envelope'" in text


def test_cross_field_rules_say_what_to_set(tmp_path: Path) -> None:
    bridge = write(
        tmp_path, "bridge.yaml", BRIDGE.replace("sources: [{queue: orders.in}]", "sources: [{topic: prices}]")
    )
    assert "needs `durableSubscription`" in problems(bridge)
    route = write(
        tmp_path,
        "routes.yaml",
        "apiVersion: jmsbridge.dev/v1alpha1\nkind: JmsBridgeRoute\nmetadata: {name: r}\n"
        "spec: {bridgeRef: {name: orders}, kafkaTopic: t, onSoftFailure: deadLetter}\n",
    )
    assert "route 'r' dead-letters soft failures but the bridge sets no routing.deadLetterTopic" in problems(
        write(tmp_path, "ok.yaml", BRIDGE), route
    )


def test_not_yaml_and_wrong_kind(tmp_path: Path) -> None:
    assert "not valid YAML" in problems(write(tmp_path, "broken.yaml", "spec: [unclosed"))
    assert "kind: expected JmsBridge or JmsBridgeRoute, got 'Deployment'" in problems(
        write(tmp_path, "other.yaml", "kind: Deployment\n")
    )
    assert "expected exactly one JmsBridge" in problems(write(tmp_path, "none.yaml", ""))


def test_the_command_exits_1_and_prints_the_problem(tmp_path: Path) -> None:
    bad = write(
        tmp_path,
        "bridge.yaml",
        BRIDGE.replace("className: org.apache.activemq.ActiveMQConnectionFactory", ""),
    )
    result = subprocess.run(
        [sys.executable, "-m", "jmsbridge", "job", "-f", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert f"{bad}: spec.jms.connectionFactory.className: Field required" in result.stderr
