"""The Spark pods meet the Pod Security Standard `restricted` by default, and a bridge can change that."""

from __future__ import annotations

from typing import Any

import pytest
from jmsbridge_operator.render import render

from bridge_job.config import JmsBridge, JmsBridgeRoute, job_config
from testbed.apiserver.spark_crd import spark_crd_file
from tests.operator.helpers import EXAMPLES, bridge, load_yaml, schema_errors
from tests.operator.restricted import pods_of, violations

EXAMPLE_FILES = {
    "cluster": EXAMPLES / "bridge.yaml",
    "provider-jars-and-tls": EXAMPLES.parent / "provider-jars-and-tls" / "bridge.yaml",
    "local": EXAMPLES.parent / "bridge.yaml",
    "nats": EXAMPLES.parent / "nats" / "bridge.yaml",
}


def _applications(body: dict[str, Any]) -> list[dict[str, Any]]:
    body["metadata"].setdefault("uid", "uid-1")
    model = JmsBridge.model_validate(body)
    routes = [JmsBridgeRoute.model_validate(r) for r in load_yaml(EXAMPLES / "routes.yaml")]
    return list(render(model, job_config(model, routes)).applications.values())


def _pods(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        f"{app['metadata']['name']}/{role}": pod
        for app in _applications(body)
        for role, pod in pods_of(app).items()
    }


@pytest.mark.parametrize("example", list(EXAMPLE_FILES))
def test_the_examples_run_under_the_restricted_profile(example: str) -> None:
    (body,) = [d for d in load_yaml(EXAMPLE_FILES[example]) if d["kind"] == "JmsBridge"]
    pods = _pods(body)
    assert pods
    assert {name: violations(pod) for name, pod in pods.items()} == {name: [] for name in pods}


def test_the_jar_copy_init_containers_run_as_the_spark_user() -> None:
    (body,) = load_yaml(EXAMPLE_FILES["provider-jars-and-tls"])
    for app in _applications(body):
        for role in ("driver", "executor"):
            part = app["spec"][role]
            assert part["podSecurityContext"]["runAsUser"] == 185  # busybox's root would be refused
            assert part["podSecurityContext"]["fsGroup"] == 185  # the checkpoint claim is the job's
            (init,) = part["initContainers"]
            assert init["securityContext"] == part["securityContext"]


def test_root_filesystems_are_read_only_and_tmp_is_an_empty_dir() -> None:
    """What the job and Spark write goes to volumes (the Spark image's entrypoint writes /tmp too); a
    bridge that mounts its own /tmp gets no second one. The job's writes: tests/e2e/test_images.py runs
    it with a read-only root."""
    own_tmp = bridge()
    own_tmp["spec"]["spark"]["pod"] = {
        "volumes": [{"name": "scratch", "emptyDir": {"medium": "Memory"}}],
        "volumeMounts": [{"name": "scratch", "mountPath": "/tmp/"}],
    }
    for body, tmp_volume in ((bridge(), "jmsbridge-tmp"), (own_tmp, "scratch")):
        for app in _applications(body):
            volumes = {v["name"] for v in app["spec"]["volumes"]}
            assert (tmp_volume in volumes, "jmsbridge-tmp" in volumes) == (
                True,
                tmp_volume == "jmsbridge-tmp",
            )
            for role in ("driver", "executor"):
                part = app["spec"][role]
                assert part["securityContext"]["readOnlyRootFilesystem"] is True
                tmp = [m["name"] for m in part["volumeMounts"] if m["mountPath"].rstrip("/") == "/tmp"]
                assert tmp == [tmp_volume]


def test_the_checker_sees_what_the_profile_refuses() -> None:
    """The checker itself: each default taken away is named (so a pass above means something)."""
    pods = _pods(bridge())
    pod = pods["orders-primary/driver"]
    assert violations({**pod, "securityContext": {}}) == [
        "containers[spark-kubernetes-driver].securityContext.runAsNonRoot: must be true (here or in the "
        "pod's)",
        "containers[spark-kubernetes-driver].securityContext.seccompProfile.type: must be RuntimeDefault or "
        "Localhost",
    ]
    container = {**pod["containers"][0], "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}
    assert violations({**pod, "containers": [container], "hostNetwork": True}) == [
        "containers[spark-kubernetes-driver].securityContext.allowPrivilegeEscalation: must be false",
        "containers[spark-kubernetes-driver].securityContext.capabilities.add: ['SYS_ADMIN']",
        "containers[spark-kubernetes-driver].securityContext.capabilities.add: ['SYS_ADMIN'] "
        "(NET_BIND_SERVICE only)",
        "containers[spark-kubernetes-driver].securityContext.capabilities.drop: must include ALL",
        "hostNetwork: true",
    ]
    assert violations({**pod, "volumes": [{"name": "node", "hostPath": {"path": "/"}}]}) == [
        "volumes[node]: ['hostPath'] not allowed",
        "volumes[node]: hostPath",
    ]


def test_a_bridge_overrides_the_defaults_field_by_field() -> None:
    body = bridge()
    body["spec"]["spark"]["pod"] = {
        "securityContext": {"runAsUser": 1000, "fsGroup": 2000, "supplementalGroups": [3000]},
        "containerSecurityContext": {
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
        },
    }
    body["spec"]["jms"]["clientLibraries"] = [{"image": "registry.example.com/jars:1"}]
    crd = spark_crd_file()
    for app in _applications(body):
        assert schema_errors(crd, app, "v1beta2") == []
        for role in ("driver", "executor"):
            part = app["spec"][role]
            assert part["podSecurityContext"] == {
                "runAsNonRoot": True,
                "runAsUser": 1000,
                "runAsGroup": 185,
                "fsGroup": 2000,
                "fsGroupChangePolicy": "OnRootMismatch",
                "seccompProfile": {"type": "RuntimeDefault"},
                "supplementalGroups": [3000],
            }
            expected = {
                "allowPrivilegeEscalation": False,
                "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                "readOnlyRootFilesystem": True,
            }
            assert part["securityContext"] == expected
            assert [c["securityContext"] for c in part["initContainers"]] == [expected]
        assert {name: violations(pod) for name, pod in pods_of(app).items()} == {
            "driver": [],
            "executor": [],
        }


def test_an_override_can_leave_the_profile_and_the_checker_says_so() -> None:
    body = bridge()
    body["spec"]["spark"]["pod"] = {
        "securityContext": {"runAsNonRoot": False, "runAsUser": 0, "seccompProfile": {"type": "Unconfined"}}
    }
    (app, *_) = _applications(body)
    found = violations(pods_of(app)["driver"])
    assert "securityContext.runAsUser: 0" in found
    assert "securityContext.seccompProfile.type: Unconfined" in found
