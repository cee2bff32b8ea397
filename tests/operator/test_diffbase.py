"""kopf keeps a digest of a handled bridge, not a copy of its spec (which may hold a waived credential).

Real kopf over HTTP against the API emulator.
"""

from __future__ import annotations

import json
from typing import Any

import kopf
import pytest
from jmsbridge_operator.handlers.diffbase import BridgeDigestStorage

from tests.kubeapi.client import KubeApi
from tests.operator.helpers import GROUP_VERSION, NAMESPACE, route, simple_bridge
from tests.operator.test_operator import View

pytestmark = pytest.mark.timeout(120)

SECRET = "Zq7-inline-x6"


@pytest.fixture()
def view(operator: KubeApi) -> View:
    return View(operator)


def test_no_copy_of_the_spec_in_annotations_and_changes_still_handled(view: View) -> None:
    inline = simple_bridge()
    inline["spec"]["jms"]["connectionFactory"]["properties"]["trustStorePassword"] = SECRET
    inline["spec"]["security"] = {"allowInlineCredentials": True}
    view.create(inline, route("out"))
    view.wait(lambda: "simple-primary" in view.apps(), "the application")
    annotations = view.wait(
        lambda: (
            ((view.bridge("simple") or {})["metadata"].get("annotations") or {}).get(
                "jmsbridge.dev/last-handled-digest"
            )
            and (view.bridge("simple") or {})["metadata"]["annotations"]
        ),
        "kopf's record of the handled bridge",
    )
    assert SECRET not in json.dumps(annotations)
    assert "jmsbridge.dev/last-handled-configuration" not in annotations
    # As stored, the bridge is what kopf handled: no diff, so status writes trigger no handler.
    storage = BridgeDigestStorage()
    raw: Any = view.bridge("simple")
    body = kopf.Body(raw)
    assert storage.fetch(body=body) == storage.build(body=body)

    # A change is still told from a repeated event: the update reaches the application.
    view.kube.patch(
        GROUP_VERSION, "JmsBridge", "simple", NAMESPACE, {"spec": {"spark": {"executor": {"instances": 2}}}}
    )
    view.wait(lambda: view.apps()["simple-primary"]["spec"]["executor"]["instances"] == 2, "the update")
    history = view.kube.history(GROUP_VERSION, "JmsBridge", "simple", NAMESPACE)
    assert all(SECRET not in json.dumps((v or {}).get("metadata") or {}) for v in history)
