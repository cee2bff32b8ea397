"""Apache Kafka on loopback for the demo, the tests and the benchmarks: one KRaft node (broker and controller
in one JVM) from the jars `scripts/install-kafka.sh` fetched with Maven.

Its listeners, each on a free port:

- `bootstrap` (PLAINTEXT): no authentication, the principal `User:ANONYMOUS`, a super user. What the demo,
  the benchmarks and every test that is not about Kafka's security connect to.
- `sasl_bootstrap` (SASL_PLAINTEXT) and `sasl_ssl_bootstrap` (SASL_SSL): PLAIN and SCRAM-SHA-512, checked for
  real. PLAIN users are fixed when the broker starts (`plain_users`); SCRAM users are added while it runs
  (`add_scram_user`). The authorizer (`StandardAuthorizer`, nothing allowed without an ACL) applies to
  them: `User:admin` is a super user, every other principal gets only what an ACL grants it.
- `ssl_bootstrap` (SSL): a client certificate signed by the broker's CA is required; the principal is
  `User:CN=<common name>`.

The TLS listeners serve a certificate for 127.0.0.1 and localhost signed by a CA made for this broker
(`ca_file`); `issue_client_certificate` signs client certificates with it.
"""

from __future__ import annotations

import base64
import contextlib
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jmsbridge import certificates, class_archive
from jmsbridge.cache import cache_dir
from jmsbridge.local import _Process, free_port, port_open, wait_until

KAFKA_HOME = cache_dir("kafka", "KAFKA_DIR")  # as install-kafka.sh says
INSTALL_HINT = "run scripts/setup.sh (or scripts/install-kafka.sh) to fetch Apache Kafka with Maven"
ADMIN = ("admin", "admin-secret")
STARTED = "Kafka Server started"  # what the broker logs once it serves clients


def kafka_lib() -> Path:
    lib = KAFKA_HOME / "current" / "lib"
    if not lib.is_dir():
        raise RuntimeError(f"Apache Kafka is not installed in {lib}: {INSTALL_HINT}")
    return lib


def class_archive_path() -> Path | None:
    """Where the class-data archive of the `java` on PATH for Kafka's jars is (or would be): a broker's
    JVM maps it to start in 2.0 CPU-s instead of 3.2 (jmsbridge/class_archive.py). None without a JVM."""
    java = shutil.which("java")
    if java is None:
        return None
    return class_archive.keyed(
        kafka_lib().parent, "classes", Path(java).resolve(), sorted(kafka_lib().glob("*.jar"))
    )


def ensure_class_archive() -> Path | None:
    """The archive, made first when missing: a broker started with none serves a few requests and is
    stopped, and its JVM writes the classes it loaded when it exits."""
    path = class_archive_path()
    return None if path is None else class_archive.made(path, _dump_classes)


def _dump_classes(partial: Path) -> None:
    # -Xlog:cds=error: the dump lists every class it skips (signed jars, old class files) as a warning.
    broker = KafkaBroker(classes=[f"-XX:ArchiveClassesAtExit={partial}", "-Xlog:cds=error"])
    try:
        broker.start()
        broker.create_topics("classes")
        _write_a_transaction(broker.bootstrap, "classes")
        broker.stop()  # the JVM writes the archive as it exits
    finally:
        broker.cleanup()


def _write_a_transaction(bootstrap: str, topic: str) -> None:
    """One record in a transaction: the requests a bridge's journal makes (its producer is gone on return,
    before the broker stops)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"record")
    producer.commit_transaction(30)


def _cluster_id() -> str:
    """A cluster id as Kafka makes one: 16 random bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _jaas(mechanism_module: str, users: dict[str, str]) -> str:
    entries = "".join(f' user_{name}="{password}"' for name, password in users.items())
    return f"org.apache.kafka.common.security.{mechanism_module} required{entries};"


LOG4J = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


@dataclass(frozen=True)
class Acl:
    """One ALLOW binding: `operation` (WRITE, READ, ...) on the `resource` (TOPIC, GROUP, TRANSACTIONAL_ID,
    CLUSTER) named `name`, or every one whose name begins with it (`prefixed`)."""

    resource: str
    name: str
    operation: str
    prefixed: bool = False

    def __str__(self) -> str:
        return f"{self.operation} on {self.resource} {self.name}{'*' if self.prefixed else ''}"


class KafkaBroker(_Process):
    name = "kafka"

    def __init__(
        self,
        port: int | None = None,
        plain_users: dict[str, str] | None = None,
        *,
        optimized: bool = False,
        classes: Sequence[str] | None = None,
    ) -> None:
        """`optimized`: the JVM compiles hot code fully (C2), as a cluster's broker does: for the benchmarks.
        Otherwise it stops at C1, which takes half the CPU to start a broker (3.1 CPU-s instead of 5.9 to
        serve) and is quick enough for the tests and the demo."""
        super().__init__()
        self.optimized = optimized
        self.classes = classes  # the JVM's class-data option (`_java`)
        self.port = port or free_port()
        self.sasl_port, self.sasl_ssl_port, self.ssl_port = free_port(), free_port(), free_port()
        self.controller_port = free_port()
        self.plain_users = {ADMIN[0]: ADMIN[1], **(plain_users or {})}
        self.data_dir = self.workdir / "data"
        self.tls_dir = self.workdir / "tls"
        self.ca_file = self.tls_dir / "ca.crt"
        self._formatted = False

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    @property
    def sasl_ssl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_ssl_port}"

    @property
    def ssl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.ssl_port}"

    def _properties(self) -> dict[str, str]:
        listeners = {
            "PLAINTEXT": self.port,
            "SASL_PLAINTEXT": self.sasl_port,
            "SASL_SSL": self.sasl_ssl_port,
            "SSL": self.ssl_port,
        }
        served = ",".join(f"{name}://127.0.0.1:{port}" for name, port in listeners.items())
        properties = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "listeners": f"{served},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": served,
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": ",".join(f"{name}:{name}" for name in listeners)
            + ",CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "false",
            # ANONYMOUS: the plaintext and controller listeners; admin: the tests' own SASL client.
            "super.users": f"User:ANONYMOUS;User:{ADMIN[0]}",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.tls_dir / "server.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_file),
            "listener.name.ssl.ssl.client.auth": "required",
            # One node: every internal topic has one replica; few partitions make them quick to create.
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "4",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.partitions": "1",
            # As a careful cluster is run: a missing topic is named by the checks, not made by a producer.
            "auto.create.topics.enable": "false",
        }
        for listener in ("sasl_plaintext", "sasl_ssl"):
            prefix = f"listener.name.{listener}"
            properties[f"{prefix}.plain.sasl.jaas.config"] = _jaas("plain.PlainLoginModule", self.plain_users)
            properties[f"{prefix}.scram-sha-512.sasl.jaas.config"] = _jaas("scram.ScramLoginModule", {})
        return properties

    def _java(
        self, main: str, *args: str, optimized: bool = False, classes: Sequence[str] | None = None
    ) -> list[str]:
        """A JVM running `main` from Kafka's jars; `classes`: its class-data option (by default the one
        that maps the archive setup made, when there is one)."""
        jit = [] if optimized else ["-XX:TieredStopAtLevel=1"]
        if classes is None:
            classes = [option] if (option := class_archive.mapping_option(class_archive_path())) else []
        return [
            "java", *jit, *classes, "-Xms256m", "-Xmx768m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
            "-cp", f"{kafka_lib()}/*", main, *args,
        ]  # fmt: skip

    def _format(self) -> None:
        """The first start: TLS material, the configuration, and storage formatted for a new cluster."""
        certificates.make_ca(self.tls_dir)
        server_crt, server_key = certificates.issue(self.tls_dir, "server", "localhost")
        # A PEM keystore is one file: the key, then the certificate.
        (self.tls_dir / "server.pem").write_bytes(server_key.read_bytes() + server_crt.read_bytes())
        (self.workdir / "log4j2.properties").write_text(LOG4J, encoding="utf-8")
        properties = self._properties()
        config = self.workdir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in properties.items()), encoding="utf-8")
        shutil.copytree(self._formatted_storage(properties), self.data_dir)
        self._formatted = True

    def _formatted_storage(self, properties: dict[str, str]) -> Path:
        """Storage formatted for a new one-node cluster, made once per Kafka install and kept beside it:
        the format tool is a JVM of its own (1.4 CPU-s a broker), a copy costs nothing. What it writes
        names the node, a cluster id and the metadata version, never a port or a path; so the copies share
        one cluster id, each being a cluster of its own."""
        template = kafka_lib().parent / f"formatted-node{properties['node.id']}"
        if template.is_dir():
            return template
        making = Path(tempfile.mkdtemp(prefix="formatting-", dir=template.parent))
        config = making / "format.properties"
        config.write_text(
            "".join(f"{k}={v}\n" for k, v in {**properties, "log.dirs": making / "data"}.items()),
            encoding="utf-8",
        )
        # `--cluster-id=`: an id may begin with "-", which a separate argument would turn into an option.
        format_tool = self._java(
            "kafka.tools.StorageTool", "format", f"--cluster-id={_cluster_id()}", f"--config={config}"
        )
        done = subprocess.run(format_tool, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            shutil.rmtree(making, ignore_errors=True)
            raise RuntimeError(f"formatting Kafka's storage failed:\n{done.stdout}\n{done.stderr}")
        # One rename, so that a broker started meanwhile in another process sees all of it or none; if
        # another process made it first, theirs is as good.
        with contextlib.suppress(OSError):
            (making / "data").rename(template)
        shutil.rmtree(making, ignore_errors=True)
        return template

    def start(self) -> KafkaBroker:
        """Starts the broker (formatting its storage the first time); `start()` after `stop()` or `kill()`
        serves the same ports and the same data."""
        if not self._formatted:
            self._format()
        offset = len(self.log())
        server = self._java(
            "kafka.Kafka",
            str(self.workdir / "server.properties"),
            optimized=self.optimized,
            classes=self.classes,
        )
        self._spawn(server, append=True)
        wait_until(
            lambda: self._check_alive() and STARTED in self.log()[offset:] and port_open(self.port),
            60,
            f"Kafka on {self.bootstrap} (its log: {self.log_path})",
            interval=0.1,
        )
        # Started is not yet ready: a topic created at once once waited 30 s for an answer (its admin
        # client had no controller to send it to). Ready when the broker names its controller.
        wait_until(self._names_a_controller, 60, f"Kafka on {self.bootstrap} to name its controller", 0.1)
        return self

    def _names_a_controller(self) -> bool:
        admin = self._admin()  # held until the answer: a client destroyed first fails its requests
        try:
            cluster = admin.describe_cluster(request_timeout=5).result(timeout=10)
        except Exception:  # not answering yet
            return False
        return cluster.controller is not None

    def _admin(self) -> Any:
        """An admin client on the plaintext listener, whose ANONYMOUS principal is a super user."""
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap})

    def create_topics(self, *names: str, partitions: int = 1) -> None:
        from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

        admin = self._admin()
        futures = admin.create_topics([NewTopic(n, partitions, 1) for n in names], operation_timeout=10)
        for future in futures.values():
            future.result(timeout=30)

    def delete_topics(self, *names: str) -> None:
        """Delete `names` and return once no broker's metadata lists them any more: the controller
        answers before the brokers have all heard, and a client asking meanwhile still finds them."""
        admin = self._admin()
        for future in admin.delete_topics(list(names), operation_timeout=10).values():
            future.result(timeout=30)
        deadline = time.monotonic() + 30
        while set(names) & set(admin.list_topics(timeout=10).topics) and time.monotonic() < deadline:
            time.sleep(0.05)

    def add_scram_user(self, name: str, password: str) -> None:
        """A SCRAM-SHA-512 user, usable on both SASL listeners at once."""
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialUpsertion,
        )

        admin = self._admin()
        upsertion = UserScramCredentialUpsertion(
            name, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password.encode()
        )
        for future in admin.alter_user_scram_credentials([upsertion]).values():
            future.result(timeout=30)

    @staticmethod
    def _acl_fields(principal: str, acl: Acl) -> tuple[Any, ...]:
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        pattern = ResourcePatternType.PREFIXED if acl.prefixed else ResourcePatternType.LITERAL
        resource, operation = ResourceType[acl.resource], AclOperation[acl.operation]
        return resource, acl.name, pattern, principal, "*", operation, AclPermissionType.ALLOW

    def grant(self, principal: str, acls: Iterable[Acl]) -> None:
        """ALLOW bindings for `principal` (`User:<name>`), as a cluster admin grants them."""
        from confluent_kafka.admin import AclBinding  # type: ignore[attr-defined]

        admin = self._admin()
        bindings = [AclBinding(*self._acl_fields(principal, acl)) for acl in acls]
        for future in admin.create_acls(bindings).values():
            future.result(timeout=30)
        self._until_applied(admin, principal, bindings, present=True)

    def revoke(self, principal: str, acls: Iterable[Acl]) -> None:
        from confluent_kafka.admin import AclBindingFilter  # type: ignore[attr-defined]

        admin = self._admin()
        filters = [AclBindingFilter(*self._acl_fields(principal, acl)) for acl in acls]
        for future in admin.delete_acls(filters).values():
            future.result(timeout=30)
        self._until_applied(admin, principal, filters, present=False)

    def _until_applied(self, admin: Any, principal: str, bindings: list[Any], *, present: bool) -> None:
        """Until the broker's authorizer has the change: the controller acknowledges it once committed, and
        the broker applies it a moment later, from its metadata log."""
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            AclBindingFilter,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        wanted = {(b.restype, b.name, b.resource_pattern_type, b.operation) for b in bindings}
        anything: Any = None  # a filter's "any name", "any host" (the stubs want a str)
        everything = AclBindingFilter(
            ResourceType.ANY,
            anything,
            ResourcePatternType.ANY,
            principal,
            anything,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            seen = admin.describe_acls(everything).result(timeout=30)
            held = {(b.restype, b.name, b.resource_pattern_type, b.operation) for b in seen}
            if (wanted <= held) if present else not (wanted & held):
                return
            time.sleep(0.05)
        raise TimeoutError(f"the broker did not apply the ACL change for {principal} within 30 s")

    def issue_client_certificate(self, common_name: str) -> tuple[Path, Path]:
        """A client certificate and key signed by this broker's CA: principal `User:CN=<common_name>` on
        the SSL listener."""
        return certificates.issue(self.tls_dir, f"client-{common_name}", common_name, alt_names=())


if __name__ == "__main__":  # scripts/setup.sh: the class-data archive of the brokers' JVM
    print(ensure_class_archive() or "kafka_server: no java found, no class-data archive made")
