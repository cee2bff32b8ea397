"""Where the files a bridge's Kafka settings name come from, so the operator's checks can read them too.

A bridge's Kafka TLS material is files in its Spark pods: `spec.kafka.properties` name them
(`ssl.ca.location: /etc/kafka-ca/ca.crt`) and `spec.spark.pod` mounts them from Secrets (or ConfigMaps).
The operator's checks connect as the bridge, but from the operator's pod, where no such file exists. So
each `*.location` path is followed through the pod's `volumeMounts` to the volume behind it, and to the
Secret or ConfigMap key whose contents the file is:

    ssl.ca.location: /etc/kafka-ca/ca.crt
      -> volumeMount kafka-ca at /etc/kafka-ca -> volume kafka-ca: secret kafka-cluster-ca
      -> Secret kafka-cluster-ca, key ca.crt

`mounted_files` does that on the spec alone (no I/O); the checks read the keys (`material.py`) and hand
librdkafka the contents instead of the paths: PEM text where it takes it (`pem_settings`: the CA, the
client certificate and its key, which so never touch the operator's disk), else a private temporary file
for as long as the probe runs (`probe.py`). A path no Secret or ConfigMap volume
covers is a `KafkaFileUnreadable`, naming the property and the path: the check cannot connect as the job
would, and says why instead of failing on a missing file.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Mapping
from typing import Any, Literal

from bridge_job.config import KafkaSpec, PodSettings, Volume, VolumeMount

# librdkafka takes these three as PEM text: the key never touches the operator's disk.
PEM_PROPERTIES: Mapping[str, str] = {
    "ssl.ca.location": "ssl.ca.pem",
    "ssl.certificate.location": "ssl.certificate.pem",
    "ssl.key.location": "ssl.key.pem",
}

Source = Literal["Secret", "ConfigMap"]
# The schema registry's TLS files (spec.kafka.schemaRegistry.tls) go by this prefix and their field name.
REGISTRY_FILE = "schemaRegistry.tls."


class KafkaFileUnreadable(ValueError):
    """A file the Kafka settings name that the operator cannot read from a Secret or ConfigMap: the
    message names the property and the path (and the Secret or ConfigMap), never what it holds."""


@dataclasses.dataclass(frozen=True)
class MountedFile:
    """One `*.location` property, and the Secret or ConfigMap key its file is in the bridge's pods."""

    setting: str  # e.g. ssl.ca.location
    path: str  # e.g. /etc/kafka-ca/ca.crt
    source: Source
    name: str  # the Secret's or ConfigMap's name
    key: str

    @property
    def where(self) -> str:
        return f"{self.source} {self.name}, key {self.key!r} ({_field(self.setting)} {self.path})"


def mounted_files(kafka: KafkaSpec, pod: PodSettings | None) -> tuple[MountedFile, ...]:
    """The Secret or ConfigMap key behind each file `kafka.properties` name; KafkaFileUnreadable for one
    that none is behind."""
    files = []
    for prop, value in sorted(kafka.properties.items()):
        if prop.endswith(".location"):
            files.append(_resolve(prop, str(value), pod or PodSettings()))
    tls = kafka.schema_registry.tls if kafka.schema_registry is not None else None
    if tls is not None:
        for name, path in (("caFile", tls.ca_file), ("certFile", tls.cert_file), ("keyFile", tls.key_file)):
            if path is not None:
                files.append(_resolve(REGISTRY_FILE + name, path, pod or PodSettings()))
    return tuple(files)


def _field(setting: str) -> str:
    """The spec field a file's setting is: a Kafka property, or the schema registry's TLS file."""
    if setting.startswith(REGISTRY_FILE):
        return f"spec.kafka.{setting}"
    return f"spec.kafka.properties.{setting}"


def registry_files(contents: FileContents) -> dict[str, bytes]:
    """The schema registry's TLS files (caFile, certFile, keyFile) among the bridge's files."""
    return {
        setting.removeprefix(REGISTRY_FILE): data
        for setting, data in contents.by_property.items()
        if setting.startswith(REGISTRY_FILE)
    }


@dataclasses.dataclass(frozen=True)
class FileContents:
    """What the bridge's Kafka files hold, by property (`ssl.key.location`...): key material, so never in
    a repr, a log line or a status."""

    by_property: Mapping[str, bytes] = dataclasses.field(default_factory=dict, repr=False)


def pem_settings(contents: FileContents) -> tuple[dict[str, str], dict[str, bytes]]:
    """The files librdkafka can take as PEM text, as its `*.pem` settings; and the rest (a keystore, a CRL,
    a CA in DER), by property, which only a file will do for."""
    pem: dict[str, str] = {}
    rest: dict[str, bytes] = {}
    for prop, data in contents.by_property.items():
        if prop.startswith(REGISTRY_FILE):  # the registry's client's, not librdkafka's
            continue
        setting = PEM_PROPERTIES.get(prop)
        text = data.decode("utf-8", errors="replace")
        if setting is not None and "-----BEGIN " in text and "\ufffd" not in text:
            pem[setting] = text
        else:
            rest[prop] = data
    return pem, rest


def _resolve(prop: str, path: str, pod: PodSettings) -> MountedFile:
    what = f"{_field(prop)} {path}"
    normalized = posixpath.normpath(path)
    if not posixpath.isabs(normalized):
        raise KafkaFileUnreadable(f"{what} is not an absolute path in the bridge's pods")
    mount = _covering_mount(normalized, pod.volume_mounts)
    if mount is None:
        raise KafkaFileUnreadable(
            f"{what} is in none of spec.spark.pod.volumeMounts: the operator's Kafka checks read the "
            "bridge's TLS files from the Secrets (or ConfigMaps) mounted there; mount it from one"
        )
    volume = next(v for v in pod.volumes if v.name == mount.name)  # the model checks that it exists
    relative = posixpath.relpath(normalized, posixpath.normpath(mount.mount_path))
    if mount.sub_path:
        relative = posixpath.normpath(posixpath.join(mount.sub_path, relative))
    source, name, key = _volume_key(volume, relative, what)
    return MountedFile(prop, path, source, name, key)


def _covering_mount(path: str, mounts: list[VolumeMount]) -> VolumeMount | None:
    """The mount a path is under; the deepest one, as in a container."""
    covering = [
        m
        for m in mounts
        if path == posixpath.normpath(m.mount_path)
        or path.startswith(posixpath.normpath(m.mount_path).rstrip("/") + "/")
    ]
    return max(covering, key=lambda m: len(posixpath.normpath(m.mount_path)), default=None)


def _volume_key(volume: Volume, relative: str, what: str) -> tuple[Source, str, str]:
    extra: dict[str, Any] = volume.model_extra or {}
    if "secret" in extra:
        source: Source = "Secret"
        spec = extra["secret"] or {}
        name = spec.get("secretName")
    elif "configMap" in extra:
        source = "ConfigMap"
        spec = extra["configMap"] or {}
        name = spec.get("name")
    else:
        kind = next(iter(extra), "unknown")
        raise KafkaFileUnreadable(
            f"{what} is in volume {volume.name} ({kind}): the operator's Kafka checks read only Secret "
            "and ConfigMap volumes"
        )
    if not isinstance(name, str) or not name:
        raise KafkaFileUnreadable(f"{what}: volume {volume.name} names no {source}")
    if relative == ".":
        raise KafkaFileUnreadable(f"{what} is the directory of volume {volume.name}, not a file in it")
    items = spec.get("items")
    if items:
        key = next((i.get("key") for i in items if posixpath.normpath(str(i.get("path"))) == relative), None)
        if key is None:
            raise KafkaFileUnreadable(
                f"{what}: no item of volume {volume.name} ({source} {name}) has path {relative}"
            )
        return source, name, str(key)
    if "/" in relative or relative.startswith(".."):
        raise KafkaFileUnreadable(f"{what}: volume {volume.name} ({source} {name}) has no file {relative}")
    return source, name, relative
