"""Asks a Kafka cluster, as the bridge's own principal, what the bridge may do; creates its journal topic.

The I/O half of the Kafka checks (`evaluation` decides). One probe opens one AdminClient with the
settings the job's own clients use (`bridge_job.kafka.clients`, with the credentials from the bridge's
Secret), and asks:

1. `describe_cluster`: does the cluster answer at all, and how many brokers does it have;
2. `describe_acls`, and when that is inconclusive a `delete_acls` whose filter matches no binding:
   does the broker run an authorizer (`SECURITY_DISABLED` says it does not);
3. `describe_topics(include_authorized_operations=True)`: does each topic exist, and what may the
   principal do on it; the journal topic is created first when the spec asks for it and it is missing;
4. `describe_consumer_groups(include_authorized_operations=True)` for the bridge's groups;
5. with `delivery: exactlyOnce`, a short-lived producer calls `init_transactions` with the probe
   transactional id `<bridgeId>.jms-bridge.preflight`. The broker runs its own authorizer on it (WRITE on
   the transactional id; IDEMPOTENT_WRITE on the cluster before Kafka 2.8), so nothing is re-implemented.
   librdkafka (2.16) has no DescribeTransactions, and describing a transactional id would only show
   DESCRIBE anyway. The probe id is the bridge's own (so its prefixed ACL must cover it) but no writer of
   the job uses it, so initialising it fences nobody.

No call can auto-create a topic: every client sets `allow.auto.create.topics=false`, and topics are only
described, never produced to. Every request has a deadline (`call_timeout_seconds`, cut to what is left
of `probe_deadline_seconds`), and the probe gives up early when librdkafka reports that all brokers are
down or authentication failed. Credentials are plain values from the bridge's Secret: they go into the
client configuration and nowhere else (not in a log line, an error, or a `repr`).

`check_bridge` is the entry for the operator: it runs the blocking probe on a worker thread and evaluates
the answer, so that one slow cluster never blocks the event loop or the checks of other bridges.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures
from pathlib import Path
from typing import Any, Final, NoReturn, TypeVar

from confluent_kafka import KafkaError, KafkaException, Producer, TopicCollection

# confluent_kafka.admin re-exports these without `__all__`, which mypy --strict does not count as export.
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from confluent_kafka.schema_registry import SchemaRegistryClient

from bridge_job.config import (
    ENV_REGISTRY_PASSWORD,
    ENV_REGISTRY_USERNAME,
    JobConfig,
    KafkaSpec,
    SchemaRegistrySpec,
)
from bridge_job.contract import JournalTopicSpec
from bridge_job.contract.clients import (
    KafkaConfig,
    KafkaCredentials,
    Refusal,
    Registration,
    client_settings,
    producer_settings,
    refusal,
    register_once,
    registry_settings,
    what_to_fix,
)
from jmsbridge_operator.conditions import Problem
from jmsbridge_operator.kafka_checks.evaluation import (
    Access,
    AclAnswer,
    Authorizer,
    CheckResult,
    CheckSettings,
    CheckState,
    GroupAnswer,
    Lookup,
    Operation,
    ProbeResult,
    Reason,
    RegistryAnswer,
    RequiredAccess,
    TopicAnswer,
    TransactionalIdAnswer,
    detect_authorizer,
    evaluate,
    journal_topic_spec,
    pending_topic_spec,
    required_access,
)
from jmsbridge_operator.kafka_checks.mounted_files import FileContents, pem_settings, registry_files

log = logging.getLogger(__name__)


class _Demoted(logging.LoggerAdapter):  # type: ignore[type-arg]
    """librdkafka's own log lines at DEBUG: a probe reports what went wrong in its result, and a dead
    cluster would otherwise fill the operator's log with connection errors from every check."""

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        self.logger.log(logging.DEBUG, msg, *args, **kwargs)


_librdkafka_log = _Demoted(logging.getLogger(f"{__name__}.librdkafka"), {})

T = TypeVar("T")

# Checks of many bridges share these threads; a probe holds one for at most its deadline.
_CHECK_THREADS = ThreadPoolExecutor(max_workers=16, thread_name_prefix="kafka-check")
# librdkafka errors after which waiting longer is pointless.
_GIVE_UP = frozenset({KafkaError._ALL_BROKERS_DOWN, KafkaError._AUTHENTICATION})
# Asked again until the deadline: the group coordinator is being made (a fresh cluster's first group
# request creates __consumer_offsets) or moves.
_COORDINATOR_MOVING = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    }
)
# A binding nobody has: deleting what matches it deletes nothing, but only an authorizer accepts it.
_NO_SUCH_ACL = AclBindingFilter(
    ResourceType.TOPIC,
    "__jmsbridge-preflight-no-such-acl",
    ResourcePatternType.LITERAL,
    "User:__jmsbridge-preflight-nobody",
    "192.0.2.1",
    AclOperation.ALL,
    AclPermissionType.DENY,
)
# None is the filter's wildcard (the library's annotations say str).
_ANY_ACL = AclBindingFilter(
    ResourceType.ANY,
    None,  # type: ignore[arg-type]
    ResourcePatternType.ANY,
    None,  # type: ignore[arg-type]
    None,  # type: ignore[arg-type]
    AclOperation.ANY,
    AclPermissionType.ANY,
)


NO_BROKER_ANSWERED: Final = "no broker answered as Kafka (the operator's log says what the client saw)"


class _NoAnswer(Exception):
    """The cluster gave no usable answer in time: the probe is incomplete."""


class _Refused(Exception):
    """The cluster refused the bridge's login or TLS handshake."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.detail)
        self.refusal = refusal


def _kafka_error(error: KafkaException) -> KafkaError:
    inner = error.args[0] if error.args else None
    if isinstance(inner, KafkaError):
        return inner
    return KafkaError(KafkaError._FAIL, str(error))


def _operations(answer: Any) -> frozenset[Operation] | None:
    """An authorized-operations answer in our terms; None when the broker did not report any.

    (confluent-kafka also turns an empty set into None; a principal that could describe the resource has
    at least DESCRIBE, so nothing is lost.)
    """
    if answer is None:
        return None
    names = {getattr(op, "name", "") for op in answer}
    return frozenset(Operation(name) for name in names if name in Operation.__members__)


class _Probe:
    """One probe's AdminClient, its deadline, and the connection errors librdkafka reports meanwhile."""

    def __init__(self, admin: KafkaConfig, producer: KafkaConfig, settings: CheckSettings) -> None:
        self._producer = producer
        self._settings = settings
        self._deadline = time.monotonic() + settings.probe_deadline_seconds
        self._errors: list[KafkaError] = []
        self.answered = False  # whether a broker answered as Kafka (the cluster's description)
        callbacks: dict[str, Any] = {"error_cb": self._errors.append, "logger": _librdkafka_log}
        self._admin = AdminClient({**admin, **callbacks})

    def timeout(self) -> float:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise _NoAnswer(f"no complete answer within {self._settings.probe_deadline_seconds:g}s")
        return min(self._settings.call_timeout_seconds, remaining)

    def wait(self, future: Future[T], what: str, timeout: float) -> T:
        """The future's result, or _NoAnswer once the deadline passes or the brokers are known down.

        Polling the AdminClient serves librdkafka's error and log callbacks meanwhile.
        """
        end = time.monotonic() + timeout
        while not wait_for_futures([future], timeout=0.05).done:
            self._admin.poll(0)
            self.raise_if_refused()
            fatal = [e for e in self._errors if e.code() in _GIVE_UP]
            if fatal:
                self._no_answer(self._connection_trouble(fatal[-1]))
            if time.monotonic() >= end:
                self._no_answer(f"{what}: no answer within {timeout:g}s{self._last_error()}")
        error = future.exception(timeout=0)
        if isinstance(error, KafkaException) and _kafka_error(error).code() == KafkaError._TIMED_OUT:
            raise _NoAnswer(f"{what}: no answer within {timeout:g}s{self._last_error()}")
        return future.result(timeout=0)

    def _no_answer(self, detail: str) -> NoReturn:
        """_NoAnswer, unless librdkafka reports a refusal meanwhile (its error events may come a poll after
        the one that tells all brokers down)."""
        self._admin.poll(0.2)
        self.raise_if_refused()
        raise _NoAnswer(detail)

    def raise_if_refused(self) -> None:
        found = next((r for e in self._errors if (r := refusal(e)) is not None), None)
        if found is not None:
            raise _Refused(found)

    def _connection_trouble(self, fatal: KafkaError) -> str:
        if fatal.code() == KafkaError._AUTHENTICATION:
            return f"authentication failed: {fatal.str()}"
        return f"all brokers are down{self._last_error()}"

    def _last_error(self) -> str:
        causes = [e for e in self._errors if e.code() not in _GIVE_UP]
        return f" (last error: {causes[-1].str()})" if causes else ""

    # -- the questions -------------------------------------------------------------------------------

    def run(self, access: RequiredAccess) -> ProbeResult:
        timeout = self.timeout()
        cluster = self.wait(
            self._admin.describe_cluster(include_authorized_operations=True, request_timeout=timeout),
            "describe cluster",
            timeout,
        )
        self.answered = True
        authorizer = self.authorizer(_operations(cluster.authorized_operations))
        topics = self.describe_topics([use.name for use in access.topics])
        creation = access.journal_creation
        if creation is not None and topics[creation.name].lookup is Lookup.NOT_FOUND:
            topics[creation.name] = self.create(journal_topic_spec(creation, len(cluster.nodes)))
        pending = access.pending_creation
        if pending is not None and topics[pending].lookup is Lookup.NOT_FOUND:
            topics[pending] = self.create(pending_topic_spec(pending, len(cluster.nodes)))
        groups = {group: self.describe_group(group) for group in access.consumer_groups}
        transactional_id = None
        if access.probe_transactional_id is not None:
            transactional_id = self.init_transactions(access.probe_transactional_id)
        return ProbeResult(
            reachable=True,
            authorizer=authorizer,
            topics=topics,
            groups=groups,
            transactional_id=transactional_id,
        )

    def authorizer(self, cluster_operations: frozenset[Operation] | None) -> Authorizer:
        answers = [
            self.acl_answer(lambda t: self._admin.describe_acls(_ANY_ACL, request_timeout=t), listing=True)
        ]
        found = detect_authorizer(answers, cluster_operations)
        if found is Authorizer.UNKNOWN and answers[0] is AclAnswer.INCONCLUSIVE:
            # An empty listing: no authorizer, or one with no binding we may see.
            # Only an authorizer accepts a delete; this one matches no binding, so it removes nothing.
            answers.append(
                self.acl_answer(
                    lambda t: self._admin.delete_acls([_NO_SUCH_ACL], request_timeout=t)[_NO_SUCH_ACL],
                    listing=False,
                )
            )
            found = detect_authorizer(answers, cluster_operations)
        return found

    def acl_answer(self, request: Callable[[float], Future[Any]], *, listing: bool) -> AclAnswer:
        try:
            timeout = self.timeout()
            result = self.wait(request(timeout), "ACL request", timeout)
        except KafkaException as error:
            code = _kafka_error(error).code()
            if code == KafkaError.SECURITY_DISABLED:
                return AclAnswer.SECURITY_DISABLED
            if code == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
                return AclAnswer.DENIED
            return AclAnswer.INCONCLUSIVE
        except _NoAnswer:
            return AclAnswer.INCONCLUSIVE
        if listing and not result:
            return AclAnswer.INCONCLUSIVE
        return AclAnswer.ACCEPTED

    def describe_topics(self, names: list[str]) -> dict[str, TopicAnswer]:
        timeout = self.timeout()
        futures = self._admin.describe_topics(
            TopicCollection(names), include_authorized_operations=True, request_timeout=timeout
        )
        answers: dict[str, TopicAnswer] = {}
        for name in names:
            try:
                description = self.wait(futures[name], f"describe topic {name}", self.timeout())
            except KafkaException as error:
                kafka_error = _kafka_error(error)
                if kafka_error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    answers[name] = TopicAnswer(Lookup.NOT_FOUND)
                elif kafka_error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                    answers[name] = TopicAnswer(Lookup.DENIED)
                else:
                    raise _NoAnswer(f"describe topic {name}: {kafka_error.str()}") from None
            else:
                answers[name] = TopicAnswer(Lookup.FOUND, _operations(description.authorized_operations))
        return answers

    def create(self, spec: JournalTopicSpec) -> TopicAnswer:
        topic = NewTopic(
            spec.name,
            num_partitions=spec.partitions,
            replication_factor=spec.replication_factor,
            config=dict(spec.config),
        )
        timeout = self.timeout()
        futures = self._admin.create_topics([topic], operation_timeout=timeout, request_timeout=timeout)
        try:
            self.wait(futures[spec.name], f"create topic {spec.name}", timeout)
        except KafkaException as error:
            kafka_error = _kafka_error(error)
            code = kafka_error.code()
            if code in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED):
                return TopicAnswer(Lookup.NOT_FOUND, creation_denied=True)
            if code != KafkaError.TOPIC_ALREADY_EXISTS:  # created meanwhile by someone else: fine
                return TopicAnswer(Lookup.NOT_FOUND, creation_error=kafka_error.str())
        else:
            log.info("created topic %s", spec.name)
        # Metadata reaches every broker shortly after the creation: ask until it is visible, and
        # otherwise leave the permissions to the next check.
        try:
            while True:
                answer = self.describe_topics([spec.name])[spec.name]
                if answer.lookup is not Lookup.NOT_FOUND:
                    return TopicAnswer(answer.lookup, answer.authorized_operations, created=True)
                time.sleep(0.1)
        except _NoAnswer:
            return TopicAnswer(Lookup.FOUND, created=True)

    def describe_group(self, group: str) -> GroupAnswer:
        while True:
            timeout = self.timeout()
            futures = self._admin.describe_consumer_groups(
                [group], include_authorized_operations=True, request_timeout=timeout
            )
            try:
                description = self.wait(futures[group], f"describe consumer group {group}", timeout)
                break
            except KafkaException as error:
                kafka_error = _kafka_error(error)
                code = kafka_error.code()
                if code == KafkaError.GROUP_AUTHORIZATION_FAILED:
                    return GroupAnswer(Lookup.DENIED)
                if code == KafkaError.GROUP_ID_NOT_FOUND:
                    return GroupAnswer(Lookup.NOT_FOUND)
                if code not in _COORDINATOR_MOVING:
                    raise _NoAnswer(f"describe consumer group {group}: {kafka_error.str()}") from None
                time.sleep(0.2)  # a fresh cluster makes its group coordinator on the first group request
        state = getattr(description.state, "name", "")
        lookup = Lookup.NOT_FOUND if state == "DEAD" else Lookup.FOUND
        return GroupAnswer(lookup, _operations(description.authorized_operations))

    def init_transactions(self, transactional_id: str) -> TransactionalIdAnswer:
        try:
            timeout = self.timeout()
        except _NoAnswer as gap:
            return TransactionalIdAnswer(Access.UNKNOWN, str(gap))
        transactional: dict[str, Any] = {
            "transactional.id": transactional_id,
            "error_cb": self._errors.append,
            "logger": _librdkafka_log,
        }
        try:
            # Destroyed when this returns; no transaction is begun, so there is nothing to abort.
            Producer({**self._producer, **transactional}).init_transactions(timeout)
        except KafkaException as error:
            kafka_error = _kafka_error(error)
            code = kafka_error.code()
            if code == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
                return TransactionalIdAnswer(Access.DENIED, kafka_error.str())
            if code == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
                return TransactionalIdAnswer(Access.DENIED, kafka_error.str(), cluster_denied=True)
            return TransactionalIdAnswer(
                Access.UNKNOWN, f"initialising {transactional_id}: {kafka_error.str()}"
            )
        return TransactionalIdAnswer(Access.ALLOWED)


def probe_configs(
    kafka: KafkaSpec,
    credentials: KafkaCredentials | None,
    files: FileContents | None = None,
    directory: Path | None = None,
) -> tuple[KafkaConfig, KafkaConfig]:
    """The settings of the probe's AdminClient and of its producer: those of the job's clients, with the
    bridge's Kafka files (`files`, read from its Secrets) in place of their paths in its pods: as PEM
    text where librdkafka takes it, else written to `directory` (needed then; private to the caller)."""
    overrides: dict[str, str] = {}
    if files is not None and files.by_property:
        overrides, rest = pem_settings(files)
        for prop, data in rest.items():
            if directory is None:
                raise ValueError(f"{prop} needs a file and the probe has no directory for it")
            path = directory / prop
            path.touch(mode=0o600)
            path.write_bytes(data)
            overrides[prop] = str(path)
    located = set(files.by_property) if files is not None else set()

    def settings(config: KafkaConfig) -> KafkaConfig:
        return {k: v for k, v in config.items() if k not in located} | overrides

    return settings(client_settings(kafka, credentials)), settings(producer_settings(kafka, credentials))


def probe_kafka(
    access: RequiredAccess,
    kafka: KafkaSpec,
    credentials: KafkaCredentials | None,
    settings: CheckSettings | None = None,
    files: FileContents | None = None,
) -> ProbeResult:
    """Ask the cluster what `access` needs to know (blocking; bounded by `probe_deadline_seconds`)."""
    settings = settings or CheckSettings()
    if files is None or not pem_settings(files)[1]:  # nothing that needs a file: no directory
        return _probe_kafka(access, kafka, credentials, settings, files, None)
    # librdkafka reads its files when a client is made, and the probe makes its producer late: the
    # directory lives as long as the probe. Owner-only (mkdtemp), removed with what it holds.
    with tempfile.TemporaryDirectory(prefix="kafka-check-") as directory:
        return _probe_kafka(access, kafka, credentials, settings, files, Path(directory))


def _probe_kafka(
    access: RequiredAccess,
    kafka: KafkaSpec,
    credentials: KafkaCredentials | None,
    settings: CheckSettings,
    files: FileContents | None,
    directory: Path | None,
) -> ProbeResult:
    try:
        probe = _Probe(*probe_configs(kafka, credentials, files, directory), settings)
    except (ValueError, KafkaException) as error:
        detail = _kafka_error(error).str() if isinstance(error, KafkaException) else str(error)
        return ProbeResult.invalid(detail)
    log.debug("probing Kafka at %s for bridge %s", access.bootstrap_servers, access.bridge_id)
    try:
        return probe.run(access)
    except _Refused as refused:
        found = refused.refusal
        return ProbeResult.refusal(found.kind.value, what_to_fix(found, kafka, operator=True))
    except (_NoAnswer, KafkaException) as error:
        detail = _kafka_error(error).str() if isinstance(error, KafkaException) else str(error)
        if probe.answered:  # Kafka's own answer (a topic, a group): the user's to read
            return ProbeResult.unreachable(detail)
        # Before any broker answered as Kafka, one text whatever happened (refused, silent, not Kafka,
        # no such host): the status is no port scanner for whoever chose the bootstrap servers. The
        # operator's log keeps the detail.
        log.info(
            "Kafka at %s for bridge %s did not answer: %s", access.bootstrap_servers, access.bridge_id, detail
        )
        return ProbeResult.unreachable(NO_BROKER_ANSWERED)
    except Exception as error:  # a bug here must not take the caller down; the check reports it
        log.exception("Kafka probe for bridge %s failed", access.bridge_id)
        return ProbeResult.unreachable(f"the probe failed: {type(error).__name__}: {error}")


_SETTINGS_OF_FILES = {
    "caFile": "ssl.ca.location",
    "certFile": "ssl.certificate.location",
    "keyFile": "ssl.key.location",
}


def probe_registry(
    access: RequiredAccess,
    spec: SchemaRegistrySpec,
    credentials: tuple[str, str] | None,
    files: FileContents | None,
    settings: CheckSettings,
) -> RegistryAnswer:
    """Register the bridge's schemas as the job will (its credentials, its TLS files): whether the registry
    answers, takes the credentials and lets the subjects take the schemas. A schema already there is
    taken as it is (the registry answers its id)."""
    environ = (
        {}
        if credentials is None
        else {ENV_REGISTRY_USERNAME: credentials[0], ENV_REGISTRY_PASSWORD: credentials[1]}
    )
    tls = registry_files(files or FileContents())
    with tempfile.TemporaryDirectory(prefix="registry-check-") as directory:
        client_settings = registry_settings(spec, environ)
        for name, data in tls.items():  # the client reads files only: private ones, for this probe
            path = Path(directory) / name
            path.write_bytes(data)
            client_settings[_SETTINGS_OF_FILES[name]] = str(path)
        client_settings["timeout"] = settings.call_timeout_seconds
        client = SchemaRegistryClient(client_settings)
        refused: list[Problem] = []
        registered = 0
        for subject, text, schema_type in access.registrations:
            outcome, message = register_once(client, spec, subject, text, schema_type)
            if outcome is Registration.UNREACHABLE:
                return RegistryAnswer(registered, unreachable=message)
            if outcome is Registration.REGISTERED:
                registered += 1
            elif outcome is Registration.INCOMPATIBLE:
                refused.append(Problem(Reason.SCHEMA_INCOMPATIBLE, subject, message))
            else:
                refused.append(Problem(Reason.SCHEMA_REGISTRY_REFUSED, spec.url, message))
                break  # the credentials or the trust: the same for every subject
        return RegistryAnswer(registered, refused=tuple(refused))


async def check_bridge(
    config: JobConfig,
    credentials: KafkaCredentials | None,
    *,
    now: float,
    state: CheckState | None,
    settings: CheckSettings | None = None,
    executor: Executor | None = None,
    files: FileContents | None = None,
    registry_credentials: tuple[str, str] | None = None,
) -> CheckResult:
    """Check a bridge's Kafka side: probe on a worker thread, then evaluate (see `kafka_checks`). With
    routes of format avro or jsonSchema, the schema registry too, once Kafka answered
    (`registry_credentials`: from spec.kafka.schemaRegistry.credentialsSecretRef).

    `now` is the wall-clock time of the check (`time.time()`); `state` is the previous result's `state`
    (None for the first check); `files` what the bridge's Kafka files hold (`material.read_kafka_files`).
    The probe's deadline counts from when a thread picks it up, so checks
    queued behind a dead cluster are late, never wrongly judged unreachable.
    """
    settings = settings or CheckSettings()
    access = required_access(config)
    loop = asyncio.get_running_loop()
    started: asyncio.Future[None] = loop.create_future()

    def mark_started() -> None:
        if not started.done():
            started.set_result(None)

    def probe() -> ProbeResult:
        loop.call_soon_threadsafe(mark_started)
        answer = probe_kafka(access, config.bridge.kafka, credentials, settings, files)
        registry = config.bridge.kafka.schema_registry
        if registry is None or not access.registrations or not answer.reachable:
            return answer
        try:
            registered = probe_registry(access, registry, registry_credentials, files, settings)
        except Exception as error:  # a bug here must not take the caller down; the check reports it
            log.exception("schema registry probe for bridge %s failed", access.bridge_id)
            registered = RegistryAnswer(unreachable=f"the probe failed: {type(error).__name__}: {error}")
        return dataclasses.replace(answer, registry=registered)

    work = loop.run_in_executor(executor or _CHECK_THREADS, probe)
    either: set[asyncio.Future[Any]] = {started, work}
    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    try:
        # The probe keeps its own deadline; this only guards against a client call that ignores it.
        answer = await asyncio.wait_for(work, timeout=settings.probe_deadline_seconds + 10)
    except TimeoutError:
        answer = ProbeResult.unreachable(f"no answer within {settings.probe_deadline_seconds:g}s")
    return evaluate(access, answer, now=now, state=state, settings=settings)
