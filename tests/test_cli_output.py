"""`-o json|yaml` where a command's output is data: `render`'s objects and `validate`'s verdict, for scripts
and CI (`jmsbridge validate -f k8s/ -o json | jq`), as kubectl's `-o`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from jmsbridge.cli import main
from testbed.resources import simple_bridge
from tests.operator.helpers import EXAMPLES, route
from tests.operator.test_cli import FILES, write


def test_render_as_json_is_one_list_of_what_the_yaml_stream_holds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", *FILES]) == 0
    stream = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert main(["render", *FILES, "-o", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed == {"apiVersion": "v1", "kind": "List", "items": stream}  # `kubectl apply -f` takes a List
    assert [(o["kind"], o["metadata"]["name"]) for o in listed["items"]] == [
        ("ServiceAccount", "orders-job"),  # the bridge's identity, but its key (identity.py)
        ("Role", "orders-job"),
        ("RoleBinding", "orders-job"),
        ("RoleBinding", "orders-spark"),
        ("Lease", "apps-orders-jms-bridge"),  # <namespace>-<name>: the default bridge id
        ("ConfigMap", "orders-config"),
        ("SparkApplication", "orders-primary"),
        ("SparkApplication", "orders-secondary"),
    ]


def test_validate_as_json_or_yaml_when_all_is_well(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", *FILES, "-f", str(EXAMPLES / "secrets.yaml"), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    verdict = json.loads(out)
    assert err == ""
    assert verdict["valid"] is True and verdict["problems"] == []
    assert verdict["counts"] == {"JmsBridge": 1, "JmsBridgeRoute": 3}
    assert verdict["skipped"] and all("Secret (not ours)" in s for s in verdict["skipped"])
    assert main(["validate", *FILES, "-f", str(EXAMPLES / "secrets.yaml"), "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == verdict


def test_validate_as_json_lists_each_problem_with_document_reason_field_and_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    durable_missing = simple_bridge()
    durable_missing["spec"]["jms"]["sources"] = [{"topic": "prices"}]
    bridges = write(tmp_path / "bridges.yaml", simple_bridge("good"), durable_missing)
    wrong_match = route("e", "good", match={"address": "in.>.x"})
    routes = write(tmp_path / "routes.yaml", route("a", "good", order=1), wrong_match)
    (tmp_path / "bad.yaml").write_text("a: [unclosed\n")
    assert (
        main(["validate", "-f", bridges, "-f", routes, "-f", str(tmp_path / "bad.yaml"), "-o", "json"]) == 1
    )
    out, err = capsys.readouterr()
    assert err == ""  # everything is in the document
    verdict = json.loads(out)
    assert verdict["valid"] is False
    problems = verdict["problems"]
    assert [(p["document"], p["reason"], p["field"]) for p in problems] == [
        (f"{bridges}#2", "InvalidSpec", "spec.jms.sources.0"),
        (f"{routes}#2", "InvalidMatch", "spec.match"),
        (str(tmp_path / "bad.yaml"), "InvalidSpec", ""),
    ]
    assert "needs `durableSubscription`" in problems[0]["message"]
    assert "not valid YAML" in problems[2]["message"]


def test_the_default_output_is_unchanged_and_a_wrong_choice_exits_2() -> None:
    run = [sys.executable, "-m", "jmsbridge", "validate", *FILES]
    plain = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert (plain.returncode, plain.stdout.strip()) == (0, "ok: 1 JmsBridge, 3 JmsBridgeRoute")
    wrong = subprocess.run([*run, "-o", "xml"], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "invalid choice: 'xml'" in wrong.stderr


def test_validate_warns_of_a_kafka_file_the_operators_checks_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A TLS file in no Secret volume: the job may have it in its image, so no problem; but the operator's
    Kafka checks would stop the bridge (docs/kafka-checks.md, TLS files), so validate says so."""
    baked = simple_bridge()
    baked["spec"]["kafka"] |= {
        "securityProtocol": "SSL",
        "properties": {"ssl.ca.location": "/opt/certs/ca.pem"},
    }
    files = write(tmp_path / "bridge.yaml", baked)
    assert main(["validate", "-f", files]) == 0
    err = capsys.readouterr().err
    assert f"{files}: warning: spec.kafka.properties.ssl.ca.location /opt/certs/ca.pem is in none of" in err
    assert main(["validate", "-f", files, "-o", "json"]) == 0
    (warning,) = json.loads(capsys.readouterr().out)["warnings"]
    assert "the bridge would not start" in warning
    assert main(["validate", "-f", str(EXAMPLES.parent / "provider-jars-and-tls")]) == 0
    assert "warning" not in capsys.readouterr().err  # its files are in its Secrets
