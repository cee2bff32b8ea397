"""`jmsbridge render | validate | crds | operator` (offline; the operator command is not started)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from jmsbridge_operator import crdgen, options
from jmsbridge_operator.kafka_checks.gate import open_gate
from jmsbridge_operator.planning import Observed, plan
from jmsbridge_operator.status import find_condition

from bridge_job import __version__
from jmsbridge.cli import main, parser
from testbed.resources import simple_bridge
from tests.operator.helpers import CRD_DIR, EXAMPLES, load_yaml, route, strict

FILES = ["-f", str(EXAMPLES / "bridge.yaml"), "-f", str(EXAMPLES / "routes.yaml")]


def write(path: Path, *documents: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


def test_render_prints_what_the_operator_creates(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", *FILES, "-f", str(EXAMPLES / "secrets.yaml")]) == 0
    printed = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    bridge = load_yaml(EXAMPLES / "bridge.yaml")[0]
    decided = plan(Observed(bridge, load_yaml(EXAMPLES / "routes.yaml")), open_gate, "1970-01-01T00:00:00Z")
    assert decided.identity is not None
    made = [*decided.identity.objects, decided.identity.lease]
    assert printed == [*made, *(w.body for w in decided.writes)]
    assert [(d["kind"], d["metadata"]["name"]) for d in printed] == [
        ("ServiceAccount", "orders-job"),  # the bridge's identity, but its key (identity.py)
        ("Role", "orders-job"),
        ("RoleBinding", "orders-job"),
        ("RoleBinding", "orders-spark"),
        ("Lease", "apps-orders-jms-bridge"),  # <namespace>-<name>: the default bridge id
        ("ConfigMap", "orders-config"),
        ("SparkApplication", "orders-primary"),
        ("SparkApplication", "orders-secondary"),
    ]


def test_render_namespace_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = simple_bridge()
    del body["metadata"]["namespace"]
    assert main(["render", "-f", write(tmp_path / "b.yaml", body), "-n", "team-a"]) == 0
    printed = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert {d["metadata"]["namespace"] for d in printed} == {"team-a"}


def test_render_refuses_an_invalid_bridge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = simple_bridge()
    body["spec"]["kafka"]["securityProtocol"] = "SASL_SSL"
    assert main(["render", "-f", write(tmp_path / "b.yaml", body)]) == 1
    assert "spec.kafka: securityProtocol SASL_SSL needs `sasl`" in capsys.readouterr().err


def test_validate_accepts_the_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", *FILES]) == 0
    assert capsys.readouterr().out.strip() == "ok: 1 JmsBridge, 3 JmsBridgeRoute"


@pytest.mark.parametrize("example", [".", *sorted(p.name for p in EXAMPLES.parent.iterdir() if p.is_dir())])
def test_every_example_directory_validates(example: str, capsys: pytest.CaptureFixture[str]) -> None:
    """What a user applies from examples/ is what the operator accepts (the local demo's files included)."""
    assert main(["validate", "-f", str(EXAMPLES.parent / example)]) == 0, capsys.readouterr().out


def test_validate_reports_every_problem_with_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = simple_bridge()
    broken["spec"]["jms"]["sources"] = [{"topic": "prices"}]
    bridges = write(tmp_path / "bridges.yaml", simple_bridge("good"), broken)
    routes = write(
        tmp_path / "routes.yaml",
        route("a", "good", order=1),
        route("b", "good", order=1, topic="other"),
        route("c", "ghost"),
        route("d", "good", order=3, kafkaTopic="not valid"),
        route("e", "good", order=4, match={"address": "in.>.x"}),
    )
    assert main(["validate", "-f", bridges, "-f", routes]) == 1
    err = capsys.readouterr().err.splitlines()
    assert f"{bridges}#2: spec.jms.sources.0: topic 'prices' needs `durableSubscription`" in err[0]
    assert any(
        line.startswith(f"{routes}#2: DuplicateOrder: order 1 is already taken by route a") for line in err
    )
    assert any(line.startswith(f"{routes}#3: BridgeNotFound: JmsBridge ghost not found") for line in err)
    assert any(line.startswith(f"{routes}#4: spec.kafkaTopic: String should match pattern") for line in err)
    assert any(line.startswith(f"{routes}#5: InvalidMatch: match.address 'in.>.x'") for line in err)
    assert err[-1] == "5 problem(s)"


def test_validate_prints_the_problems_the_operator_writes_into_the_statuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rules beyond the schema: the bridge's and a route's dead-letter policy without a dead-letter topic."""
    bridge, no_topic = simple_bridge("a"), simple_bridge("b")
    no_topic["spec"]["routing"] = {"onSoftFailure": "deadLetter"}
    dead_letter = route("r", "a", onSoftFailure="deadLetter")
    bridges = write(tmp_path / "bridges.yaml", bridge, no_topic)
    routes = write(tmp_path / "routes.yaml", dead_letter)

    assert main(["validate", "-f", bridges, "-f", routes]) == 1

    needs = "deadLetter needs spec.routing.deadLetterTopic"
    route_says = "onSoftFailure deadLetter needs the bridge's spec.routing.deadLetterTopic"
    assert capsys.readouterr().err.splitlines() == [
        f"{bridges}#2: spec.routing.onSoftFailure: {needs}",
        f"{routes}: {route_says}",
        "2 problem(s)",
    ]
    route_status = plan(Observed(bridge, [dead_letter]), open_gate, "1970-01-01T00:00:00Z").routes[0].status
    accepted = find_condition(route_status, "Accepted") or {}
    assert (accepted["reason"], accepted["message"]) == ("InvalidSpec", route_says)
    ready = find_condition(plan(Observed(no_topic), open_gate, "1970-01-01T00:00:00Z").status, "Ready") or {}
    assert (ready["reason"], ready["message"]) == (
        "InvalidSpec",
        f"Invalid spec: spec.routing.onSoftFailure: {needs}.",
    )


def test_validate_reports_every_problem_of_one_route(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not only the first: a wrong match, a dead-letter policy without topic and a taken order, at once."""
    bridges = write(tmp_path / "bridges.yaml", simple_bridge("a"))
    routes = write(
        tmp_path / "routes.yaml",
        route("first", "a", order=1),
        route("r", "a", order=1, match={"address": "nowhere.*"}, onSoftFailure="deadLetter"),
    )
    assert main(["validate", "-f", bridges, "-f", routes]) == 1
    err = capsys.readouterr().err.splitlines()
    mine = [line for line in err if line.startswith(f"{routes}#2: ")]
    assert [line.split(": ")[1] for line in mine] == [
        "InvalidMatch",
        "onSoftFailure deadLetter needs the bridge's spec.routing.deadLetterTopic",
        "DuplicateOrder",
    ], err
    assert err[-1] == "3 problem(s)"


def test_validate_unreadable_and_foreign_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.yaml").write_text("a: [unclosed\n")
    assert main(["validate", "-f", str(tmp_path / "bad.yaml"), "-f", str(tmp_path / "missing.yaml")]) == 1
    err = capsys.readouterr().err
    assert "bad.yaml:2:1: not valid YAML" in err and "missing.yaml: cannot read" in err
    assert main(["validate", "-f", str(EXAMPLES / "secrets.yaml"), *FILES]) == 0  # Secrets are skipped


def test_render_refuses_everything_when_anything_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`render | kubectl apply` must not drop a refused route unseen: one problem, nothing rendered."""
    files = write(
        tmp_path / "all.yaml", simple_bridge(), route("good"), route("bad", match={"address": "in.>.x"})
    )
    assert main(["render", "-f", files]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{files}#3: InvalidMatch: match.address 'in.>.x': `>` must be the last segment" in err
    assert err.splitlines()[-1] == "1 problem(s): nothing rendered"


def test_resources_defined_twice_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = simple_bridge("other")
    files = write(
        tmp_path / "all.yaml", simple_bridge(), simple_bridge(), other, route("r"), route("r", "other")
    )
    for command in ("validate", "render"):
        assert main([command, "-f", files]) == 1
        out, err = capsys.readouterr()
        twice = "is defined more than once; give each a name of its own"
        assert err.splitlines()[:4] == [
            f"{files}#1: JmsBridge simple in namespace apps {twice}",
            f"{files}#2: JmsBridge simple in namespace apps {twice}",
            f"{files}#4: JmsBridgeRoute r in namespace apps {twice}",
            f"{files}#5: JmsBridgeRoute r in namespace apps {twice}",
        ]
        assert out == ""
    elsewhere = copy.deepcopy(simple_bridge())
    elsewhere["metadata"]["namespace"] = "team-b"
    assert main(["validate", "-f", write(tmp_path / "ns.yaml", simple_bridge(), elsewhere)]) == 0


SECRET = "hunter2-do-not-print"


def credentials_everywhere() -> dict[str, Any]:
    body = simple_bridge()
    body["spec"]["jms"]["connectionFactory"]["properties"] = {
        "brokerURL": f"failover:(tcp://amq:61616)?jms.userName=app&jms.password={SECRET}",
        "trustStorePassword": SECRET,
    }
    body["spec"]["jms"]["credentialsSecretRef"] = {"name": "amq"}
    body["spec"]["kafka"]["properties"] = {"sasl.password": SECRET, "client.id": "x"}
    return body


def test_credentials_outside_secrets_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = write(tmp_path / "b.yaml", credentials_everywhere())
    jms_hint = "put credentials in the Secret named by spec.jms.credentialsSecretRef"
    for command in ("validate", "render"):
        assert main([command, "-f", files]) == 1
        out, err = capsys.readouterr()
        assert out == "" and SECRET not in err
        assert err.splitlines()[:3] == [
            f"{files}: CredentialsInSpec: spec.jms.connectionFactory.properties.trustStorePassword: "
            f"a credential in the spec; {jms_hint}",
            f"{files}: CredentialsInSpec: spec.jms.connectionFactory.properties.brokerURL: holds a password "
            f"(jms.password); remove it and {jms_hint}",
            f"{files}: CredentialsInSpec: spec.kafka.properties.sasl.password: a credential in the spec; "
            "put credentials in the Secret named by spec.kafka.sasl.credentialsSecretRef",
        ]


def test_the_operator_refuses_credentials_and_its_status_never_shows_them() -> None:
    decided = plan(Observed(credentials_everywhere(), [route("r")]), open_gate, "1970-01-01T00:00:00Z")
    assert decided.writes == []
    ready = find_condition(decided.status, "Ready") or {}
    assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
    assert (find_condition(decided.status, "Stalled") or {}).get("status") == "True"
    assert "spec.kafka.properties.sasl.password: a credential in the spec" in ready["message"]
    assert SECRET not in yaml.safe_dump(decided.status)


def allowed_credentials() -> dict[str, Any]:
    body = credentials_everywhere()
    del body["spec"]["kafka"]["properties"]["sasl.password"]
    body["spec"]["security"] = {"allowInlineCredentials": True}
    return body


ALLOWED = "(allowed by spec.security.allowInlineCredentials: stored in plain text in the job's ConfigMap)"


def test_allowed_inline_credentials_are_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = write(tmp_path / "b.yaml", allowed_credentials())
    jms_hint = "put credentials in the Secret named by spec.jms.credentialsSecretRef"
    for command in ("validate", "render"):
        assert main([command, "-f", files]) == 0
        out, err = capsys.readouterr()
        assert SECRET not in err
        assert err.splitlines() == [
            f"{files}: warning: spec.jms.connectionFactory.properties.trustStorePassword: "
            f"a credential in the spec; {jms_hint} {ALLOWED}",
            f"{files}: warning: spec.jms.connectionFactory.properties.brokerURL: holds a password "
            f"(jms.password); remove it and {jms_hint} {ALLOWED}",
        ]
    rendered = {d["kind"]: d for d in yaml.safe_load_all(out) if d}
    assert SECRET in yaml.safe_dump(rendered["ConfigMap"]["data"])  # what the switch allows, and says


def test_sasl_password_in_kafka_properties_is_refused_even_when_inline_credentials_are_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = credentials_everywhere()
    body["spec"]["security"] = {"allowInlineCredentials": True}
    assert main(["validate", "-f", write(tmp_path / "b.yaml", body)]) == 1
    refused = [line for line in capsys.readouterr().err.splitlines() if ": warning: " not in line]
    assert refused[0].endswith(
        "CredentialsInSpec: spec.kafka.properties.sasl.password: a credential in the spec; put credentials "
        "in the Secret named by spec.kafka.sasl.credentialsSecretRef (never used, whatever "
        "spec.security.allowInlineCredentials says)"
    )


def test_the_operator_takes_a_bridge_whose_inline_credentials_are_allowed() -> None:
    decided = plan(Observed(allowed_credentials(), [route("r")]), open_gate, "1970-01-01T00:00:00Z")
    assert "ConfigMap" in [write.kind for write in decided.writes if write.verb == "create"]
    assert [w.reason for w in decided.validation.warnings] == ["CredentialsInSpec", "CredentialsInSpec"]
    assert SECRET not in yaml.safe_dump(decided.status)


def test_crds_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds"]) == 0
    printed = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert printed == list(crdgen.crds().values())
    assert main(["crds", "--check"]) == 0


def test_operator_options(monkeypatch: pytest.MonkeyPatch) -> None:
    command = ["operator", "-n", "apps", "-n", "team-*", "--liveness", "http://0.0.0.0:8080/healthz"]
    command += ["--metrics-port", "9090", "--json-logs", "--resync-seconds", "60", "--workers", "4"]
    args = parser().parse_args(command)
    calls: dict[str, Any] = {}
    import kopf

    monkeypatch.setattr(kopf, "configure", lambda **kw: calls.__setitem__("configure", kw))
    monkeypatch.setattr(kopf, "run", lambda **kw: calls.__setitem__("run", kw))
    for name in (
        "JMSBRIDGE_METRICS_PORT",
        "JMSBRIDGE_METRICS_ADDRESS",
        "JMSBRIDGE_RESYNC_SECONDS",
        "JMSBRIDGE_WORKERS",
        "JMSBRIDGE_WATCH_TIMEOUT",
        "JMSBRIDGE_KAFKA_CHECKS",
        "JMSBRIDGE_KAFKA_CHECK_INTERVAL",
        "JMSBRIDGE_KAFKA_GRACE_PERIOD",
    ):
        # The command writes these into os.environ: setting first makes monkeypatch restore them after.
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    assert args.run(args) == 0
    assert calls["run"] == {
        "clusterwide": False,
        "namespaces": ["apps", "team-*"],
        "liveness_endpoint": "http://0.0.0.0:8080/healthz",
        "standalone": True,
    }
    assert calls["configure"]["log_format"] == kopf.LogFormat.JSON
    settings = options.OperatorOptions.from_env()
    assert (settings.metrics_port, settings.resync_seconds, settings.workers) == (9090, 60.0, 4)
    assert (settings.kafka_checks, settings.kafka_check_interval_seconds) == (True, 60.0)

    checks = ["operator", "--kafka-check-interval", "20", "--kafka-grace-period", "90"]
    timed = parser().parse_args(checks)
    assert timed.run(timed) == 0
    settings = options.OperatorOptions.from_env()
    assert (settings.kafka_check_interval_seconds, settings.kafka_grace_seconds) == (20.0, 90.0)
    off = parser().parse_args(["operator", "--no-kafka-checks"])
    assert off.run(off) == 0 and options.OperatorOptions.from_env().kafka_checks is False

    everything = parser().parse_args(["operator"])
    assert everything.run(everything) == 0 and calls["run"]["clusterwide"] is True
    with pytest.raises(SystemExit):
        parser().parse_args(["operator", "-A", "-n", "apps"])


def test_version_prints_the_release_and_exits_0() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jmsbridge", "--version"], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout.strip()) == (0, f"jmsbridge {__version__}")


@pytest.mark.parametrize("command", ["validate", "render"])
def test_the_offline_commands_start_without_kopf(command: str) -> None:
    """They use the operator's pure parts only: kopf and the handlers cost them 0.6 of 1.35 CPU-s."""
    code = (
        "import sys; from jmsbridge.cli import main; "
        f"code = main([{command!r}, '-f', {str(EXAMPLES)!r}]); "
        "print('kopf' in sys.modules, code, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stderr.splitlines()[-1] == "False 0", done.stderr


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            ("jms", "ingest", "maxBatchMessages"),
            "200",
            "spec.jms.ingest.maxBatchMessages: Input should be a valid integer",
        ),
        (("suspend",), "on", "spec.suspend: Input should be a valid boolean"),
        (
            ("spark", "triggerIntervalMs"),
            1.5,
            "spec.spark.triggerIntervalMs: Input should be a valid integer",
        ),
    ],
)
def test_validate_refuses_what_the_api_server_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: tuple[str, ...], value: Any, message: str
) -> None:
    import jsonschema

    body = simple_bridge()
    parent = body["spec"]
    for key in field[:-1]:
        parent = parent.setdefault(key, {})
    parent[field[-1]] = value
    path = write(tmp_path / "bridge.yaml", body)
    assert main(["validate", "-f", path]) == 1
    assert f"{path}: {message}" in capsys.readouterr().err.splitlines()
    # The API server's judgement: the CRD's schema refuses the same document.
    schema = strict(load_yaml(CRD_DIR / "jmsbridge.dev_jmsbridges.yaml")[0]["spec"]["versions"][0])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(body, schema["schema"]["openAPIV3Schema"])
