"""kopf keeps a digest of a handled bridge, not a copy of its spec (which may hold a waived credential).

Real kopf over HTTP against a real API server.
"""

from __future__ import annotations

import json
from typing import Any

import kopf
import pytest
from jmsbridge_operator.handlers.diffbase import BridgeDigestStorage

from testbed.apiserver.client import KubeApi
from testbed.resources import GROUP_VERSION, NAMESPACE, simple_bridge
from tests.operator.helpers import route
from tests.operator.test_operator import View

pytestmark = pytest.mark.timeout(120)

SECRET = "Zq7-inline-x6"


@pytest.fixture()
def view(operator: KubeApi) -> View:
    return View(operator)


def kopf_annotations(body: dict[str, Any] | None) -> dict[str, str]:
    annotations = ((body or {}).get("metadata") or {}).get("annotations") or {}
    ours = {k: v for k, v in annotations.items() if k.startswith("jmsbridge.dev/")}
    return {k: v for k, v in ours.items() if "kopf" in k or "last-handled" in k}


def test_no_copy_of_the_spec_in_annotations_and_changes_still_handled(view: View) -> None:
    inline = simple_bridge()
    inline["spec"]["jms"]["connectionFactory"]["properties"]["trustStorePassword"] = SECRET
    inline["spec"]["security"] = {"allowInlineCredentials": True}
    view.create(inline, route("out"))
    view.wait(lambda: "simple-primary" in view.apps(), "the application")

    # A change is still told from a repeated event: the update reaches the application.
    view.kube.patch(
        GROUP_VERSION, "JmsBridge", "simple", NAMESPACE, {"spec": {"spark": {"executor": {"instances": 2}}}}
    )
    view.wait(lambda: view.apps()["simple-primary"]["spec"]["executor"]["instances"] == 2, "the update")
    # kopf's record of what it handled is in the operator's memory: no annotation of kopf's at all (no
    # copy of the spec, no digest, no marker), and no patch of the bridge's metadata but its finalizer.
    history = view.kube.history(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE)
    assert all(SECRET not in json.dumps((v or {}).get("metadata") or {}) for v in history)
    assert all(not kopf_annotations(v) for v in history)


def test_an_older_operators_record_goes_at_the_next_handling(view: View) -> None:
    old = simple_bridge()
    old["metadata"]["annotations"] = {
        "jmsbridge.dev/last-handled-configuration": json.dumps({"spec": {"secret": SECRET}}),
        "jmsbridge.dev/last-handled-digest": "0" * 64,
    }
    view.create(old, route("out"))
    view.wait(lambda: not kopf_annotations(view.bridge("simple")), "the older records removed")


def test_the_digest_tells_a_change_from_a_repeated_event() -> None:
    storage = BridgeDigestStorage()
    raw: Any = {**simple_bridge(), "metadata": {**simple_bridge()["metadata"], "uid": "u1"}}
    body = kopf.Body(raw)
    assert storage.fetch(body=body) is None  # never handled: kopf handles it as created
    storage.store(body=body, patch=kopf.Patch(), essence=storage.build(body=body))
    assert storage.fetch(body=body) == storage.build(body=body)  # no diff
    changed: Any = {**raw, "spec": {**raw["spec"], "suspend": True}}
    assert storage.fetch(body=kopf.Body(changed)) != storage.build(body=kopf.Body(changed))
    storage.forget(body)
    assert storage.fetch(body=body) is None
