"""
A toy kopf operator that the emulator's end-to-end tests run: each `Toy` gets a child ConfigMap.

It does what a real operator does through the API, nothing more: kopf's own finalizer, progress and
diff-base in annotations, a child created with the kubernetes client and adopted (ownerReference),
status written through the status subresource, and Events posted.
"""

from __future__ import annotations

import os
from typing import Any

import kopf
import kubernetes

GROUP, VERSION, PLURAL = "kubeapi.example.com", "v1", "toys"
FINALIZER = "kubeapi.example.com/finalizer"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=GROUP)
    settings.watching.server_timeout = 60
    # Loaded lazily, from $KUBECONFIG as it is now: the client fixes its default path at import.
    kubernetes.config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))  # type: ignore[no-untyped-call]


def child_name(toy_name: str) -> str:
    return f"{toy_name}-child"


@kopf.on.resume(GROUP, VERSION, PLURAL)
@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL)
def reconcile(
    body: kopf.Body,
    spec: kopf.Spec,
    meta: kopf.Meta,
    name: str,
    namespace: str | None,
    reason: str,
    patch: kopf.Patch,
    **_: Any,
) -> None:
    assert namespace is not None  # toys are namespaced
    api = kubernetes.client.CoreV1Api()
    data = {"message": str(spec.get("message", ""))}
    try:
        child = api.read_namespaced_config_map(child_name(name), namespace)
    except kubernetes.client.ApiException as e:
        if e.status != 404:
            raise
        manifest: dict[str, Any] = {
            "metadata": {"name": child_name(name), "labels": {"toy": name}},
            "data": data,
        }
        kopf.adopt(manifest, owner=body)
        child_body = kubernetes.client.V1ConfigMap.from_dict(manifest)
        assert child_body is not None
        api.create_namespaced_config_map(namespace, child_body)
    else:
        if child.data != data:
            api.patch_namespaced_config_map(child_name(name), namespace, {"data": data})
    patch.status["child"] = child_name(name)
    patch.status["message"] = data["message"]
    patch.status["observedGeneration"] = meta["generation"]
    cause = kopf.Reason(reason).value  # create, update, resume
    patch.status["lastReason"] = cause
    kopf.info(body, reason="Reconciled", message=f"{child_name(name)} holds {data['message']!r} ({cause})")


@kopf.on.delete(GROUP, VERSION, PLURAL)
def finalize(body: kopf.Body, **_: Any) -> None:
    kopf.info(body, reason="Finalized", message="the child goes with its owner")
