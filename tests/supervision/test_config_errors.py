"""`jmsbridge job` refuses invalid YAML before it starts, naming the file, the field and the problem."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bridge_job.config import ConfigError
from bridge_job.config.loading import load_job_config

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
    formats = "'native', 'basic', 'json', 'envelope', 'avro' or 'jsonSchema'"
    assert f"{routes}: spec.format: Input should be {formats}" in text


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
    assert f"{route}: onSoftFailure deadLetter needs the bridge's spec.routing.deadLetterTopic" in problems(
        write(tmp_path, "ok.yaml", BRIDGE), route
    )


def test_not_yaml_and_wrong_kind(tmp_path: Path) -> None:
    broken = write(tmp_path, "broken.yaml", "spec: [unclosed")
    assert problems(broken).startswith(f"{broken}:1:16: not valid YAML")
    assert "kind: expected JmsBridge or JmsBridgeRoute, got 'Deployment'" in problems(
        write(tmp_path, "other.yaml", "kind: Deployment\n")
    )
    assert "expected exactly one JmsBridge" in problems(write(tmp_path, "none.yaml", ""))


def run_job(*files: Path) -> subprocess.CompletedProcess[str]:
    """`jmsbridge job` as a process; a configuration it refuses ends it before Spark starts."""
    command = [sys.executable, "-m", "jmsbridge", "job"]
    for path in files:
        command += ["-f", str(path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_the_command_exits_1_and_prints_the_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = write(
        tmp_path,
        "bridge.yaml",
        BRIDGE.replace("className: org.apache.activemq.ActiveMQConnectionFactory", ""),
    )
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    result = run_job(bad)
    assert result.returncode == 1
    assert f"{bad}: spec.jms.connectionFactory.className: Field required" in result.stderr
    reset = [sys.executable, "-m", "jmsbridge", "reset-checkpoint", "-f", str(bad), "--to", "latest"]
    refused = subprocess.run(reset, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "connectionFactory.className: Field required" in refused.stdout
    assert list(temporary.iterdir()) == [], "the work directories the commands made are left behind"


def route_yaml(name: str, order: int, extra: str = "") -> str:
    return (
        "---\napiVersion: jmsbridge.dev/v1alpha1\nkind: JmsBridgeRoute\n"
        f"metadata: {{name: {name}}}\n"
        f"spec: {{bridgeRef: {{name: orders}}, order: {order}, kafkaTopic: t{extra}}}\n"
    )


def test_the_job_refuses_what_the_operator_refuses(tmp_path: Path) -> None:
    """The same rules as `jmsbridge validate` and the operator: no route is run that they would refuse."""
    bridge = write(tmp_path, "bridge.yaml", BRIDGE)
    wildcard = write(tmp_path, "wildcard.yaml", route_yaml("w", 1, ", match: {address: orders.>.x}"))
    assert problems(bridge, wildcard) == (
        f"{wildcard}: InvalidMatch: match.address 'orders.>.x': `>` must be the last segment"
    )
    same_order = write(tmp_path, "orders.yaml", route_yaml("a", 5) + route_yaml("b", 5))
    assert problems(bridge, same_order) == (
        f"{same_order}#2: DuplicateOrder: order 5 is already taken by route a (jmsToKafka) of bridge orders; "
        "pick another order"
    )
    twice = write(tmp_path, "twice.yaml", BRIDGE + route_yaml("r", 1) + route_yaml("r", 2))
    defined_twice = "JmsBridgeRoute r is defined more than once; give each a name of its own"
    assert problems(twice) == f"{twice}#2: {defined_twice}\n{twice}#3: {defined_twice}"


def test_a_rendered_config_is_judged_too(tmp_path: Path) -> None:
    config = load_job_config([write(tmp_path, "bridge.yaml", BRIDGE + route_yaml("r", 1))])
    document = config.dump()
    document["routes"][0]["spec"]["match"] = {"address": "orders.>.x"}
    rendered = write(tmp_path, "job.yaml", yaml.safe_dump(document))
    assert problems(rendered) == (
        f"{rendered}: routes: r: InvalidMatch: match.address 'orders.>.x': `>` must be the last segment"
    )


SECRET = "hunter2-do-not-print"


def test_credentials_in_the_spec_are_refused_and_never_printed(tmp_path: Path) -> None:
    body = yaml.safe_load(BRIDGE)
    url = f"tcp://app:{SECRET}@127.0.0.1:61616?jms.password={SECRET}"
    body["spec"]["jms"]["connectionFactory"]["properties"] = {"brokerURL": url}
    body["spec"]["kafka"]["properties"] = {"sasl.jaas.config": f'x required password="{SECRET}";'}
    bridge = write(tmp_path, "bridge.yaml", yaml.safe_dump(body))
    result = run_job(bridge)
    assert result.returncode == 1
    assert SECRET not in result.stdout + result.stderr
    assert (
        f"{bridge}: CredentialsInSpec: spec.jms.connectionFactory.properties.brokerURL: holds a password "
        "(user:password@, jms.password); remove it and put credentials in the Secret named by "
        "spec.jms.credentialsSecretRef"
    ) in result.stderr
    assert (
        f"{bridge}: CredentialsInSpec: spec.kafka.properties.sasl.jaas.config: a credential" in result.stderr
    )


def test_allowed_inline_credentials_are_a_warning_and_the_job_takes_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = yaml.safe_load(BRIDGE)
    body["spec"]["jms"]["connectionFactory"]["properties"] = {"password": SECRET}
    body["spec"]["security"] = {"allowInlineCredentials": True}
    bridge = write(tmp_path, "bridge.yaml", yaml.safe_dump(body))
    with caplog.at_level("WARNING", logger="jmsbridge.config"):
        config = load_job_config([bridge])
    assert config.bridge.jms.connection_factory is not None
    assert config.bridge.jms.connection_factory.properties == {"password": SECRET}  # used, as allowed
    assert caplog.messages == [
        f"{bridge}: spec.jms.connectionFactory.properties.password: a credential in the spec; put "
        "credentials in the Secret named by spec.jms.credentialsSecretRef (allowed by "
        "spec.security.allowInlineCredentials: stored in plain text in the job's ConfigMap)"
    ]
