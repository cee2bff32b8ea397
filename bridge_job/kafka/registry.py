"""The schema registry's door (spec.kafka.schemaRegistry): the ids of the bridge's schemas for a topic,
and writers' schemas by id, each asked once per process and then kept.

The registry speaks Confluent's API (Confluent's own, Apicurio's `/apis/ccompat/v7`, Karapace);
confluent-kafka's client asks it. What its answers mean for the bridge:

- no answer (refused, reset, timed out) or a 5xx or 429: an outage, waited out for
  `spec.outages.patienceSeconds` like Kafka's (bridge_job/faults/outages.py), then a stop;
- 401 or 403: the credentials are wrong or lack a permission; a certificate the bridge does not trust:
  both stop the bridge at once, naming the Secret or the file;
- a schema refused (409: not compatible with what the subject holds under its compatibility rule;
  422: invalid): a stop at once, with the registry's reason and the subject;
- a schema id the registry does not know (404): that record cannot be read, a soft failure (FormatError).
"""

from __future__ import annotations

import collections
import enum
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.common._httpx_compat import httpx  # the client's own HTTP library
from confluent_kafka.schema_registry.error import SchemaRegistryError

from bridge_job.config import (
    ENV_REGISTRY_PASSWORD,
    ENV_REGISTRY_USERNAME,
    Direction,
    Format,
    JobConfig,
    SchemaRegistrySpec,
)
from bridge_job.faults.credentials import login_from_environment
from bridge_job.faults.outages import Outage, OutageListener, patiently
from bridge_job.faults.stops import BridgeStopped
from bridge_job.formats import FormatError
from bridge_job.formats.registry_wire import SchemaIds
from bridge_job.formats.subjects import SCHEMAS, subject

ASK_SECONDS = 10.0
SCHEMAS_KEPT = 256  # writers' schemas a process keeps
INTERVAL_SECONDS = 5.0


def client_settings(spec: SchemaRegistrySpec, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The client's settings: the URL, HTTP Basic credentials from the environment (the operator fills it
    from the Secret), the TLS files. No retries of its own: the bridge's patience decides."""
    settings: dict[str, Any] = {"url": spec.url, "timeout": ASK_SECONDS, "max.retries": 0}
    if spec.credentials_secret_ref is not None:
        secret = spec.credentials_secret_ref.name
        login = login_from_environment(
            "the schema registry", ENV_REGISTRY_USERNAME, ENV_REGISTRY_PASSWORD, secret, environ
        )
        settings["basic.auth.user.info"] = ":".join(login)
    if spec.tls is not None:
        files = {
            "ssl.ca.location": spec.tls.ca_file,
            "ssl.certificate.location": spec.tls.cert_file,
            "ssl.key.location": spec.tls.key_file,
        }
        settings |= {name: path for name, path in files.items() if path is not None}
    return settings


def refusal(spec: SchemaRegistrySpec, error: BaseException) -> str | None:
    """What to fix when the registry refused the bridge itself (credentials, permission, TLS); None for
    anything else."""
    where = f"the schema registry at {spec.url}"
    if isinstance(error, SchemaRegistryError) and error.http_status_code in (401, 403):
        secret = spec.credentials_secret_ref
        given = (
            f"the credentials of Secret {secret.name} (keys {secret.username_key}, {secret.password_key})"
            if secret is not None
            else "no credentials (spec.kafka.schemaRegistry.credentialsSecretRef is not set)"
        )
        verdict = "did not accept" if error.http_status_code == 401 else "does not allow this call with"
        return f"{where} {verdict} {given}: {error.error_message}"
    if isinstance(error, httpx.ConnectError) and _is_tls(error):
        ca = spec.tls.ca_file if spec.tls is not None and spec.tls.ca_file else "the image's CAs"
        return f"{where}: TLS failed (trusting {ca}; spec.kafka.schemaRegistry.tls): {error}"
    return None


def _is_tls(error: BaseException) -> bool:
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLError) or "CERTIFICATE_VERIFY_FAILED" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def incompatible(spec: SchemaRegistrySpec, name: str, schema_type: str, error: SchemaRegistryError) -> str:
    return (
        f"the schema registry at {spec.url} refused the bridge's {schema_type} schema under subject {name}: "
        f"it is not compatible with the versions the subject holds, under the subject's compatibility rule "
        f"({error.error_message}); write to another topic, or change the subject's compatibility rule"
    )


class Registration(enum.Enum):
    REGISTERED = "registered"
    UNREACHABLE = "unreachable"  # an outage: asking again may mend it
    REFUSED = "refused"  # the credentials, a permission, the TLS trust, or the request itself
    INCOMPATIBLE = "incompatible"  # the subject's compatibility rule


def register_once(
    client: SchemaRegistryClient, spec: SchemaRegistrySpec, name: str, text: str, schema_type: str
) -> tuple[Registration, str]:
    """One attempt at registering a schema, and what its answer means (the operator's check): the
    outcome and, unless registered, what to say."""
    try:
        client.register_schema(name, Schema(text, schema_type))
    except (SchemaRegistryError, httpx.TransportError) as error:
        refused = refusal(spec, error)
        if refused is not None:
            return Registration.REFUSED, refused
        if isinstance(error, SchemaRegistryError) and error.http_status_code == 409:
            return Registration.INCOMPATIBLE, incompatible(spec, name, schema_type, error)
        if transient(spec, error):  # (refusal() said it is no refusal: this raises nothing)
            return Registration.UNREACHABLE, f"the schema registry at {spec.url}: {error}"
        assert isinstance(error, SchemaRegistryError)
        return Registration.REFUSED, (
            f"the schema registry at {spec.url} refused registering the {schema_type} schema of subject "
            f"{name}: {error.http_status_code} {error.error_message}"
        )
    return Registration.REGISTERED, ""


def transient(spec: SchemaRegistrySpec, error: BaseException) -> bool:
    """A registry failure that waiting may mend; a refusal of the bridge stops it at once."""
    refused = refusal(spec, error)
    if refused is not None:
        raise BridgeStopped(refused)
    if isinstance(error, httpx.TransportError):
        return True
    return isinstance(error, SchemaRegistryError) and (
        error.http_status_code >= 500 or error.http_status_code in (408, 429)
    )


class SchemaRegistry:
    """The registry for one bridge in one process (a formats.registry_wire.Schemas)."""

    def __init__(
        self,
        spec: SchemaRegistrySpec,
        patience_seconds: float,
        listener: OutageListener | None = None,
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        self.spec = spec
        self.patience = patience_seconds
        self.listener = listener
        self.pause = pause
        self._client: SchemaRegistryClient | None = None
        self._ids: dict[tuple[str, Format, bool], SchemaIds] = {}
        # Writers' schemas by id, the most recently used kept; None: the registry has none under the id.
        # The ids come from records, which anyone who may produce to a topic writes: bounded both ways.
        self._schemas: collections.OrderedDict[int, str | None] = collections.OrderedDict()
        self._lock = threading.Lock()

    def client(self) -> SchemaRegistryClient:
        if self._client is None:
            self._client = SchemaRegistryClient(client_settings(self.spec))
        return self._client

    def ids(self, topic: str, fmt: Format, keyed: bool = True) -> SchemaIds:
        """The schemas' ids for `topic`: the value's, and with `keyed` the key's (a route that keys its
        records itself registers no key schema, which could clash with the key schema its topic has)."""
        with self._lock:
            found = self._ids.get((topic, fmt, keyed))
            if found is None:
                key_schema, value_schema, schema_type = SCHEMAS[fmt]
                strategy = self.spec.subject_name_strategy
                value = self._register(subject(strategy, topic, "value"), value_schema, schema_type)
                key = (
                    self._register(subject(strategy, topic, "key"), key_schema, schema_type)
                    if keyed
                    else None
                )
                found = self._ids[(topic, fmt, keyed)] = SchemaIds(value, key)
            return found

    def schema(self, schema_id: int) -> str:
        with self._lock:
            if schema_id in self._schemas:
                self._schemas.move_to_end(schema_id)
                found = self._schemas[schema_id]
            else:
                found = self._fetch(schema_id)
                self._schemas[schema_id] = found
                if len(self._schemas) > SCHEMAS_KEPT:
                    self._schemas.popitem(last=False)
        if found is None:
            raise FormatError(
                f"value: schema id {schema_id} is not in the schema registry at {self.spec.url}"
            )
        return found

    def _fetch(self, schema_id: int) -> str | None:
        try:
            answer = self._ask(lambda: self.client().get_schema(schema_id), f"reading schema {schema_id}")
        except SchemaRegistryError as error:
            if error.http_status_code == 404:
                return None
            raise self._stop(error, f"reading schema {schema_id}") from None
        return answer.schema_str or ""

    def _register(self, name: str, text: str, schema_type: str) -> int:
        doing = f"registering the {schema_type} schema of subject {name}"
        try:
            schema_id: int = self._ask(
                lambda: self.client().register_schema(name, Schema(text, schema_type)), doing
            )
        except SchemaRegistryError as error:
            if error.http_status_code == 409:
                raise BridgeStopped(incompatible(self.spec, name, schema_type, error)) from None
            raise self._stop(error, doing) from None
        return schema_id

    def _stop(self, error: SchemaRegistryError, doing: str) -> BridgeStopped:
        return BridgeStopped(
            f"the schema registry at {self.spec.url} refused {doing}: {error.http_status_code} "
            f"{error.error_message}"
        )

    def _ask(self, call: Callable[[], Any], doing: str) -> Any:
        outage = Outage(
            f"the schema registry at {self.spec.url} while {doing}",
            self.patience,
            listener=self.listener,
            hint="check spec.kafka.schemaRegistry.url and that the registry is up",
        )
        return patiently(
            lambda timeout: call(), outage, lambda error: transient(self.spec, error), self.pause
        )


def schema_registry(config: JobConfig) -> SchemaRegistry | None:
    """The bridge's registry for this process's flows (None: the bridge has none)."""
    spec = config.bridge.kafka.schema_registry
    return None if spec is None else SchemaRegistry(spec, config.bridge.outages.patience_seconds)


def uses_registry(config: JobConfig) -> bool:
    return any(route.spec.format.registered for route in config.routes)


def registry_at_start(config: JobConfig, listener: OutageListener) -> SchemaRegistry | None:
    """The bridge's registry once it answers, with the schemas of the jmsToKafka routes registered: a
    schema the registry refuses stops the job before it takes a message. None: no route needs one."""
    spec = config.bridge.kafka.schema_registry
    if spec is None or not uses_registry(config):
        return None
    registry = SchemaRegistry(spec, config.bridge.outages.patience_seconds, listener)
    for route in config.routes_for(Direction.JMS_TO_KAFKA):
        if route.spec.format.registered:
            registry.ids(route.spec.topic, route.spec.format, keyed=route.spec.key is None)
    return registry


class RegistryProbe:
    """Asks the registry for its compatibility setting every `INTERVAL_SECONDS` in the background and tells
    `listener` whether it answered: SchemaRegistryConnected says what is true now, whether records flow
    or not (kafka/probe.py does the same for Kafka). It never stops anything."""

    def __init__(
        self, registry: SchemaRegistry, listener: OutageListener, interval: float = INTERVAL_SECONDS
    ) -> None:
        self.what = f"the schema registry at {registry.spec.url}"
        self._registry = registry
        self._listener = listener
        self._interval = interval
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="registry-probe", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                self._registry.client().get_compatibility()
                self._listener.back(self.what)
            except (SchemaRegistryError, httpx.TransportError) as error:
                if isinstance(error, SchemaRegistryError) and error.http_status_code == 404:
                    self._listener.back(self.what)  # answered: no global rule set
                else:
                    self._listener.failing(self.what, refusal(self._registry.spec, error) or str(error))
            if self._stopping.wait(self._interval):
                return

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=ASK_SECONDS + 1)
