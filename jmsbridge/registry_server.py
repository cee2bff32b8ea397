"""Apicurio Registry on loopback for the tests: the Confluent-compatible schema registry (its API under
`/apis/ccompat/v7`) that the schema-registry formats are tested against, storage in memory, run from what
`scripts/install-apicurio.sh` fetched with Maven.

Apicurio 3.3 needs Java 21 or newer (on Java 17 it dies with `UnsupportedClassVersionError`): `registry_java`
finds one. Its management interface (health, metrics), which the application cannot turn off, would listen
on 0.0.0.0:9000, a fixed port that two registries side by side would share, on every interface: it gets a
free port of its own on loopback.

Its global compatibility rule is BACKWARD unless asked otherwise, as Confluent's registry has it: Apicurio
3.3.3's own default is NONE (any new schema accepted; measured here).
"""

from __future__ import annotations

import os
import re
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from jmsbridge.cache import cache_dir
from jmsbridge.local import _Process, free_port, wait_until

APICURIO_DIR = cache_dir("apicurio", "APICURIO_DIR") / "current"  # as scripts/install-apicurio.sh puts it
INSTALL_HINT = "run scripts/setup.sh (or scripts/install-apicurio.sh) to fetch Apicurio Registry with Maven"
JAVA_HINT = "set APICURIO_JAVA to the java of a JDK 21 or newer"
JVMS = Path("/usr/lib/jvm")  # where Debian and the Temurin packages put their JDKs
MIN_JAVA = 21
COMPAT_API = "/apis/ccompat/v7"


def registry_app() -> Path:
    app = APICURIO_DIR / "app" / "quarkus-run.jar"
    if not app.is_file():
        raise RuntimeError(f"Apicurio Registry is not installed in {APICURIO_DIR}: {INSTALL_HINT}")
    return app


def java_major(jdk: Path) -> int:
    """A JDK's major version, from its `release` file; 0 when it has none."""
    release = jdk / "release"
    found = re.search(r'^JAVA_VERSION="(\d+)', release.read_text(), re.M) if release.is_file() else None
    return int(found.group(1)) if found else 0


def registry_java() -> str:
    """$APICURIO_JAVA, else the java of the newest JDK under /usr/lib/jvm when it is 21 or newer."""
    given = os.environ.get("APICURIO_JAVA")
    if given:
        return given
    jdks = [jdk for jdk in JVMS.iterdir() if (jdk / "bin" / "java").is_file()] if JVMS.is_dir() else []
    newest = max(jdks, key=java_major, default=None)
    if newest is None or java_major(newest) < MIN_JAVA:
        raise RuntimeError(f"Apicurio Registry needs Java {MIN_JAVA} or newer, none in {JVMS}: {JAVA_HINT}")
    return str(newest / "bin" / "java")


@dataclass(frozen=True)
class TlsFiles:
    """The registry's certificate and key (PEM), and the CA that signed it (for its readiness check)."""

    certificate: Path
    key: Path
    ca: Path


class ApicurioRegistry(_Process):
    """One registry, in memory: what it holds is gone when it stops."""

    name = "apicurio"

    def __init__(
        self,
        port: int | None = None,
        compatibility: str = "BACKWARD",
        properties: dict[str, str] | None = None,
        tls: TlsFiles | None = None,
    ) -> None:
        super().__init__()
        self.port = port or free_port()
        self.compatibility = compatibility
        self.properties = properties or {}  # more Quarkus and Apicurio settings (-D), e.g. to ask a login
        self.tls = tls  # https only, with this certificate

    @property
    def url(self) -> str:
        """The Confluent-compatible API, as a Confluent client (`schema.registry.url`) is given it."""
        scheme = "http" if self.tls is None else "https"
        return f"{scheme}://127.0.0.1:{self.port}{COMPAT_API}"

    def answers(self) -> bool:
        trusted = None if self.tls is None else ssl.create_default_context(cafile=str(self.tls.ca))
        try:
            with urllib.request.urlopen(f"{self.url}/subjects", timeout=1, context=trusted) as response:
                return bool(response.status == 200)
        except urllib.error.HTTPError as error:
            return error.code == 401  # up, and asking for a login
        except (urllib.error.URLError, OSError):
            return False

    def start(self) -> ApicurioRegistry:
        if self.tls is None:
            listener = [f"-Dquarkus.http.port={self.port}"]
        else:
            listener = [
                f"-Dquarkus.http.ssl-port={self.port}", f"-Dquarkus.http.port={free_port()}",
                f"-Dquarkus.http.ssl.certificate.files={self.tls.certificate}",
                f"-Dquarkus.http.ssl.certificate.key-files={self.tls.key}",
                "-Dquarkus.http.insecure-requests=disabled",
            ]  # fmt: skip
        argv = [
            registry_java(), "-Xmx256m", "-XX:TieredStopAtLevel=1",
            *listener, "-Dquarkus.http.host=127.0.0.1",
            f"-Dquarkus.management.port={free_port()}", "-Dquarkus.management.host=127.0.0.1",
            f"-Dapicurio.rules.global.compatibility={self.compatibility}",
            *(f"-D{name}={value}" for name, value in self.properties.items()),
            "-jar", str(registry_app()),
        ]  # fmt: skip
        self._spawn(argv)
        ready = f"Apicurio Registry at {self.url}"
        wait_until(lambda: self._check_alive() and self.answers(), 90, ready, 0.2)
        return self
