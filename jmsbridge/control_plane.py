"""A real Kubernetes control plane on loopback, for the tests and the benchmarks: etcd, kube-apiserver and
kube-controller-manager (its garbage collector, namespace, ServiceAccount and PVC-protection controllers),
built once by `scripts/install-control-plane.sh` into a cache.

The API server runs as a cluster's would in the respects the operator meets: TLS with a CA of its own,
bearer tokens (a static admin token, and ServiceAccount tokens from the TokenRequest API), RBAC, and
every admission plugin that is on by default. No kubelet, scheduler or network runs, so no pod ever
starts: the tests play the spark-operator by writing SparkApplication status.

    with ControlPlane() as cluster:           # ready in about 5 s
        cluster.kubeconfig                    # system:masters, for setting things up
        cluster.kubeconfig_for("ns", "sa")    # a ServiceAccount's own identity, for the code under test
"""

from __future__ import annotations

import fcntl
import http.client
import json
import os
import shutil
import ssl
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from jmsbridge import certificates
from jmsbridge.cache import cache_dir
from jmsbridge.local import _Process, free_port, stop_group, wait_until

CACHE_DIR = cache_dir("control-plane", "CONTROL_PLANE_DIR")
BIN_DIR = CACHE_DIR / "current"
INSTALL_HINT = "run scripts/install-control-plane.sh (scripts/setup.sh does) to build it once"
ADMIN_USER = "jmsbridge-admin"
# Every request in the audit log when it is answered (a watch also when it starts): who asked what, and
# the answer's code; the writes of bridges, SparkApplications and Leases with the object stored (what a
# test reads as its history).
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: RequestResponse
    verbs: [create, update, patch, delete]
    resources:
      - group: jmsbridge.dev
      - group: sparkoperator.k8s.io
      - group: coordination.k8s.io
        resources: [leases]
  - level: Metadata
"""
# Go's collector runs when the heap has grown by this percentage (default 100). The suite's API servers,
# six at once on 2 cores, spent about a sixth of their CPU in it: at 400 they use 16 % less CPU for the
# same tests (3.75 -> 3.15 CPU-s, three operator test files) and a few hundred MB more memory each.
API_SERVER_GOGC = "400"
SERVICE_RANGE = "10.96.0.0/24"  # only allocated from, never routed: no Service here has endpoints


def binaries_installed() -> bool:
    return all((BIN_DIR / name).is_file() for name in ("etcd", "kube-apiserver", "kube-controller-manager"))


def _binary(name: str) -> str:
    path = BIN_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: {INSTALL_HINT}")
    return str(path)


def _make_certificates(directory: Path) -> None:
    """A CA, the API server's serving certificate for 127.0.0.1 and localhost, and the ServiceAccount
    signing key: made fresh for every control plane, so nothing secret is kept anywhere."""
    certificates.make_ca(directory)
    certificates.issue(
        directory, "server", "kube-apiserver", (*certificates.LOOPBACK_NAMES, "DNS:kubernetes.default.svc")
    )
    certificates.make_key_pair(directory, "sa")


class _Server(_Process):
    def __init__(self, name: str, workdir: Path) -> None:
        self.name = name
        self.workdir = workdir
        self.log_path = workdir / f"{name}.log"
        self.process = None


class ControlPlane:
    """etcd, kube-apiserver and kube-controller-manager on free loopback ports, in one work directory.

    `prepare` runs once the API server answers, before the controllers start; `seed`: an etcd data
    directory to start from (a copy of it, `etcd_seed`)."""

    def __init__(
        self, *, prepare: Callable[[ControlPlane], None] | None = None, seed: Path | None = None
    ) -> None:
        # Called once the API server answers, before the controllers start: CRDs installed here are
        # known to the garbage collector from its start (it looks for new kinds only every 30 s).
        self._prepare = prepare
        self._seed = seed
        self.workdir = Path(tempfile.mkdtemp(prefix="jmsbridge-control-plane-"))
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.ca_file = self.workdir / "pki" / "ca.crt"
        self.admin_token = os.urandom(16).hex()
        self.kubeconfig = self.workdir / "admin.kubeconfig"
        self.audit_log = self.workdir / "audit.log"  # one JSON event per request (`audit_events`)
        self._etcd = _Server("etcd", self.workdir)
        self._apiserver = _Server("kube-apiserver", self.workdir)
        self._controllers = _Server("kube-controller-manager", self.workdir)
        self._ssl = ssl.create_default_context(cafile=None)
        self._connections = threading.local()  # each thread's connection to the API server (`request`)

    # --- lifecycle ---

    def start(self) -> ControlPlane:
        started = False
        try:
            self._start()
            started = True
        finally:
            if not started:
                self.cleanup()
        return self

    def _start(self) -> None:
        pki = self.workdir / "pki"
        _make_certificates(pki)
        self._ssl = ssl.create_default_context(cafile=str(self.ca_file))
        self._connections = threading.local()  # a new server: none of the old connections
        (self.workdir / "audit-policy.yaml").write_text(AUDIT_POLICY, encoding="utf-8")
        (self.workdir / "tokens.csv").write_text(
            f'{self.admin_token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n', encoding="utf-8"
        )
        if self._seed is not None:
            shutil.copytree(self._seed, self.workdir / "etcd")
        client_port, peer_port = free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{client_port}"
        self._etcd._spawn([
            _binary("etcd"), "--data-dir", str(self.workdir / "etcd"), "--name", "default",
            "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
            "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-cluster", f"default=http://127.0.0.1:{peer_port}",
            "--log-level", "warn", "--quota-backend-bytes", str(2 * 1024**3),
            # No fsync per write: a test's cluster need not survive a power cut, and under a busy suite's
            # disk a Lease renewal waited on it for longer than a 4 s lease allows.
            "--unsafe-no-fsync",
        ])  # fmt: skip
        self._apiserver._spawn([
            _binary("kube-apiserver"), "--etcd-servers", etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(self.port),
            "--tls-cert-file", str(pki / "server.crt"), "--tls-private-key-file", str(pki / "server.key"),
            "--token-auth-file", str(self.workdir / "tokens.csv"),
            "--authorization-mode", "RBAC",
            "--service-account-key-file", str(pki / "sa.pub"),
            "--service-account-signing-key-file", str(pki / "sa.key"),
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-cluster-ip-range", SERVICE_RANGE,
            "--audit-policy-file", str(self.workdir / "audit-policy.yaml"),
            "--audit-log-path", str(self.audit_log), "--audit-log-maxsize", "0",
            "--enable-priority-and-fairness=false",  # one client at a time: no queueing to configure
            "--watch-cache=true", "--profiling=false", "-v", "1",
        ], env=os.environ | {"GOGC": API_SERVER_GOGC})  # fmt: skip
        self._write_kubeconfig(self.kubeconfig, ADMIN_USER, self.admin_token)
        wait_until(self._ready, 60, "kube-apiserver to answer /readyz", interval=0.1)
        if self._prepare is not None:
            self._prepare(self)
        self._controllers._spawn([
            _binary("kube-controller-manager"), "--kubeconfig", str(self.kubeconfig),
            "--controllers", "garbage-collector-controller,namespace-controller,serviceaccount-controller,"
            "persistentvolumeclaim-protection-controller",
            "--leader-elect=false", "--secure-port", "0", "--use-service-account-credentials=false",
            "--concurrent-gc-syncs", "5", "--concurrent-namespace-syncs", "5", "-v", "1",
        ])  # fmt: skip
        wait_until(self._controllers_ready, 60, "kube-controller-manager to create namespace default's "
                   "ServiceAccount", interval=0.1)  # fmt: skip

    def _ready(self) -> bool:
        for server in (self._etcd, self._apiserver):
            server._check_alive()
        try:
            return bool(self.request("GET", "/readyz", raw=True) == "ok")
        except (OSError, ApiError):  # not listening yet, or not ready (500)
            return False

    def _controllers_ready(self) -> bool:
        self._controllers._check_alive()
        try:
            self.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")
            return True
        except ApiError:
            return False

    def stop(self) -> None:
        for server in (self._controllers, self._apiserver, self._etcd):
            stop_group(server.process, 20)

    def cleanup(self) -> None:
        """Kill etcd, the API server and the controllers and delete their files (see `_Process.cleanup`)."""
        for server in (self._controllers, self._apiserver, self._etcd):
            server.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cleanup()

    def audit_offset(self) -> int:
        """Where the audit log ends now: `audit_events(offset)` returns what came after."""
        return self.audit_log.stat().st_size if self.audit_log.exists() else 0

    def audit_events(self, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        """The audit events written since `offset`, and the offset after them (a line the server is still
        writing is left for the next call)."""
        if not self.audit_log.exists():
            return [], offset
        with self.audit_log.open("rb") as f:
            f.seek(offset)
            data = f.read()
        whole = data[: data.rfind(b"\n") + 1]
        return [json.loads(line) for line in whole.splitlines() if line.strip()], offset + len(whole)

    # --- identities ---

    def _write_kubeconfig(
        self, path: Path, user: str, token: str, namespace: str = "default", server: str | None = None
    ) -> Path:
        cluster = {"server": server or self.url, "certificate-authority": str(self.ca_file)}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "local", "cluster": cluster}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [
                {"name": user, "context": {"cluster": "local", "user": user, "namespace": namespace}}
            ],
            "current-context": user,
        }
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        path.chmod(0o600)
        return path

    def service_account_token(self, namespace: str, name: str, seconds: int = 3600 * 24) -> str:
        """A token of a ServiceAccount (the TokenRequest API, as the kubelet gets one for a pod)."""
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": seconds}}  # fmt: skip
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
        token: str = self.request("POST", path, body)["status"]["token"]
        return token

    def kubeconfig_for(self, namespace: str, service_account: str, server: str | None = None) -> Path:
        """A kubeconfig that acts as the ServiceAccount, and nothing more: what its pod would be. `server`:
        another address of the API server (a proxy in front of it, 127.0.0.1 for its certificate)."""
        token = self.service_account_token(namespace, service_account)
        suffix = "" if server is None else f".{abs(hash(server))}"
        path = self.workdir / f"{namespace}.{service_account}{suffix}.kubeconfig"
        user = f"system:serviceaccount:{namespace}:{service_account}"
        return self._write_kubeconfig(path, user, token, namespace, server)

    # --- requests (as the admin) ---

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        token: str | None = None,
        raw: bool = False,
    ) -> Any:
        """A request as the admin (or as `token`); the decoded JSON body, or ApiError."""
        data = None if body is None else json.dumps(body).encode()
        headers = {
            "Authorization": f"Bearer {token or self.admin_token}",
            "Content-Type": content_type,
            "Accept": "application/json",
            "User-Agent": "jmsbridge-tests/1",
        }
        status, payload = self._exchange(method, path, data, headers)
        if status >= 400:
            raise ApiError.from_response(method, path, status, payload)
        if raw:
            return payload.decode()
        return json.loads(payload or b"null")

    def _exchange(
        self, method: str, path: str, data: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes]:
        """One request over this thread's kept-alive connection: a TLS handshake per request was the
        tests' largest cost in Python (about 25 CPU-s of a quick lane), and the server's. A connection the
        server closed while it was idle is opened again, once; a failure is an OSError."""
        reused = getattr(self._connections, "https", None) is not None
        try:
            return self._send(method, path, data, headers)
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            if not reused:
                raise
            return self._send(method, path, data, headers)

    def _send(self, method: str, path: str, data: bytes | None, headers: dict[str, str]) -> tuple[int, bytes]:
        connection: http.client.HTTPSConnection | None = getattr(self._connections, "https", None)
        if connection is None:
            connection = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=60, context=self._ssl)
        self._connections.https = None  # in use: a failure below leaves none kept
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            result = response.status, response.read()
        except http.client.HTTPException as e:
            connection.close()
            if isinstance(e, OSError):  # RemoteDisconnected
                raise
            raise ConnectionError(f"{method} {path}: {e!r}") from e
        except BaseException:
            connection.close()
            raise
        self._connections.https = connection
        return result


def etcd_seed(name: str, prepare: Callable[[ControlPlane], None]) -> Path:
    """An etcd data directory of a control plane `prepare` ran on, made once per `name` (which must say
    what `prepare` writes, e.g. a digest of the CRDs it installs) and per build of the binaries, and kept
    beside them. A plane started from it (`ControlPlane(seed=...)`) skips that work: installing our CRDs
    and the spark-operator's took 2.2 of the API server's 4.4 CPU-s to start. Of the plane that made it,
    the seed keeps no key or certificate, and only ports nothing uses again: the API server writes its
    own address when it starts, and a one-member etcd never dials the peer address it recorded. The
    newest few are kept."""
    seeds = BIN_DIR.resolve() / "etcd-seeds"
    seed = seeds / name
    seeds.mkdir(exist_ok=True)
    with open(seeds / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one process (test worker) makes it, the others wait for it
        if seed.is_dir():
            os.utime(seed)  # used now: not pruned
            return seed
        plane = ControlPlane(prepare=prepare).start()
        try:
            plane.stop()  # etcd closes its database
            making = Path(tempfile.mkdtemp(prefix=".making-", dir=seeds))
            shutil.copytree(plane.workdir / "etcd", making / "etcd")
            (making / "etcd").rename(seed)
            shutil.rmtree(making)
        finally:
            plane.cleanup()
        kept = sorted(
            (p for p in seeds.iterdir() if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime
        )
        for old in kept[:-_SEEDS_KEPT]:
            shutil.rmtree(old, ignore_errors=True)
    return seed


_SEEDS_KEPT = 4  # other checkouts (worktrees) may want other CRDs meanwhile


class ApiError(Exception):
    """The API server refused a request; `status`, `reason` and `message` are those of its `Status`."""

    def __init__(self, method: str, path: str, status: int, body: Any) -> None:
        self.status = status
        self.body = body
        self.reason = body.get("reason", "") if isinstance(body, dict) else ""
        self.message = str(body.get("message", body)) if isinstance(body, dict) else str(body)
        super().__init__(f"{method} {path} -> {status} {self.reason}: {self.message}")

    @classmethod
    def from_response(cls, method: str, path: str, status: int, raw: bytes) -> ApiError:
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode(errors="replace")
        return cls(method, path, status, body)


def main() -> int:
    """`python -m jmsbridge.control_plane`: a control plane for trying things by hand, until Ctrl-C."""
    import signal
    import time

    if not binaries_installed():
        print(f"no control plane in {BIN_DIR}: {INSTALL_HINT}", file=sys.stderr)
        return 1
    with ControlPlane() as plane:
        print(f"export KUBECONFIG={plane.kubeconfig}   # the admin; then: kubectl apply -f crds/", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
