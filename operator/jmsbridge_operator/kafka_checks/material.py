"""Reads a bridge's Kafka files from the Secrets and ConfigMaps its pods mount them from (`mounted_files`).

Only `get`, one object per file's Secret or ConfigMap, in the bridge's namespace: the operator's RBAC
grants exactly that on Secrets (with the checks on) and ConfigMaps. What is read goes to the check's
Kafka client and nowhere else.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from bridge_job.config import JmsBridgeSpec
from bridge_job.contract.clients import CONFIG_MAPS, SECRETS, ApiError, Kube, Resource
from jmsbridge_operator.kafka_checks.mounted_files import FileContents, KafkaFileUnreadable, mounted_files
from jmsbridge_operator.secret_marks import bridges_of, marked_for, not_marked


def read_kafka_files(
    kube: Kube, namespace: str, spec: JmsBridgeSpec, marked_for_bridge: str | None = None
) -> FileContents:
    """The contents of every file `spec.kafka.properties` name, from the Secrets or ConfigMaps that
    `spec.spark.pod` mounts them from; with `marked_for_bridge`, only from Secrets marked for that bridge
    (secret_marks.py). KafkaFileUnreadable names what is missing, forbidden or unmarked; ApiError for any
    other API answer (try again)."""
    files = mounted_files(spec.kafka, spec.spark.pod)
    objects: dict[tuple[str, str], dict[str, Any]] = {}
    contents: dict[str, bytes] = {}
    for file in files:
        key = (file.source, file.name)
        if key not in objects:
            resource: Resource = SECRETS if file.source == "Secret" else CONFIG_MAPS
            objects[key] = _get(kube, resource, namespace, file.source, file.name, file.where)
            unmarked = not marked_for(bridges_of(objects[key]), marked_for_bridge or "")
            if file.source == "Secret" and marked_for_bridge is not None and unmarked:
                raise KafkaFileUnreadable(not_marked(file.name, marked_for_bridge, file.where))
        contents[file.setting] = _value(objects[key], file.source, file.key, file.where)
    return FileContents(contents)


def _get(
    kube: Kube, resource: Resource, namespace: str, source: str, name: str, where: str
) -> dict[str, Any]:
    try:
        found = kube.get(resource, namespace, name)
    except ApiError as error:
        if error.status == 403:
            raise KafkaFileUnreadable(
                f"the operator may not read {where}: it needs `get` on {resource.plural} in namespace "
                f"{namespace}"
            ) from None
        raise
    if found is None:
        raise KafkaFileUnreadable(f"{source} {name} not found in namespace {namespace}, for {where}")
    return found


def _value(found: dict[str, Any], source: str, key: str, where: str) -> bytes:
    """A Secret's data are base64; a ConfigMap's are text (`data`) or base64 (`binaryData`)."""
    data = found.get("data") or {}
    if source == "ConfigMap" and key in data:
        return str(data[key]).encode("utf-8")
    encoded = data.get(key) if source == "Secret" else (found.get("binaryData") or {}).get(key)
    if encoded is None:
        raise KafkaFileUnreadable(f"{where}: the {source} has no such key")
    try:
        return base64.b64decode(str(encoded), validate=True)
    except binascii.Error:
        raise KafkaFileUnreadable(f"{where}: the {source}'s value is not base64") from None
