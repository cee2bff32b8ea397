"""How the operator copes with many bridges: 300 bridges x 3 routes against a real Kubernetes API server.

    python bench/operator_scale.py [--bridges 300] [--routes 3] [--standby] [--idle-seconds 60]

The control plane (etcd, kube-apiserver, kube-controller-manager: jmsbridge/control_plane.py, built by
scripts/install-control-plane.sh) runs beside it; the operator runs as `jmsbridge operator` in a child
process, as the chart's ServiceAccount with the chart's RBAC for every namespace, so that its memory is its
own. Requests are counted from the API server's audit log. The benchmark creates the bridges and their
routes as fast as it can, then measures:

- `reconciled_s`: from the first create until every bridge is reconciled: status for the current
  generation, its routes in effect, its ConfigMap and SparkApplication(s) there, every route Accepted;
- `running_s`: after playing the spark-operator (every application RUNNING), until every bridge is Ready;
- `requests_per_bridge`: API requests the operator made (kopf's and ours), per bridge, up to `running`;
  `requests_by_resource`: the same by verb and resource (`patch jmsbridges/status`), in all;
- `idle_requests_per_bridge_per_minute`: what the operator asks while nothing changes (every bridge
  Ready and the operator quiet for 5 s: `settled_after_ready_s` after Ready), over `--idle-seconds`,
  beyond its watches (`idle_requests_by_resource` says what they were);
- `operator_peak_rss_mib`: the operator process's peak resident memory (VmHWM);
- `operator_cpu_s_until_reconciled`: the operator process's CPU seconds from the first create until
  every bridge is reconciled (against `reconciled_s`: how much of that time the operator was busy);
- `baseline_direct_write_s`: the baseline, measured in the same run on the same server: the time this
  client takes to write the operator's ConfigMaps and SparkApplications itself, with no operator, and
  `reconciled_vs_baseline`, how many times longer the operator took to reconcile everything.

Prints ONE JSON line. Not a test: a measurement (bounded in time, loopback only).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "operator")]

from jmsbridge.control_plane import ControlPlane  # noqa: E402
from jmsbridge.local import free_port, wait_until  # noqa: E402
from testbed.apiserver.chart import install_identity  # noqa: E402
from testbed.apiserver.client import KubeApi  # noqa: E402
from testbed.apiserver.spark_crd import installed_file  # noqa: E402
from testbed.resources import held_lease, simple_bridge  # noqa: E402

EXTRA: list[str] = ["-q"]
NAMESPACE = "bench"
BASELINE_NAMESPACE = "bench-baseline"
GROUP_VERSION = "jmsbridge.dev/v1alpha1"
SPARK_VERSION = "sparkoperator.k8s.io/v1beta2"
OPERATOR_AGENTS = ("kopf", "OpenAPI-Generator")


def bridge(name: str, standby: bool) -> dict[str, Any]:
    body = simple_bridge(name, standby=standby)
    body["metadata"]["namespace"] = NAMESPACE
    body["spec"]["jms"] |= {"credentialsSecretRef": {"name": "amq"}, "sources": [{"queue": f"{name}.in"}]}
    return body


def route(bridge_name: str, index: int) -> dict[str, Any]:
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "JmsBridgeRoute",
        "metadata": {"name": f"{bridge_name}-r{index}", "namespace": NAMESPACE},
        "spec": {
            "bridgeRef": {"name": bridge_name},
            "order": index,
            "match": {"headers": {"JMSType": f"t{index}"}},
            "kafkaTopic": f"{bridge_name}.out{index}",
        },
    }


def peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


@contextlib.contextmanager
def operator_process(
    kube: KubeApi, kubeconfig: Path, log: Path, root: Path = REPO
) -> Iterator[subprocess.Popen[bytes]]:
    port = free_port()
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "PYTHONPATH": f"{root}:{root / 'operator'}"}
    env["JMSBRIDGE_KAFKA_CHECKS"] = "false"  # the bridges name no real Kafka; this measures reconciling
    env.pop("KUBERNETES_SERVICE_HOST", None)
    command = [sys.executable, "-m", "jmsbridge", "operator", "--all-namespaces", *EXTRA]
    command += ["--liveness", f"http://127.0.0.1:{port}/healthz"]
    with log.open("wb") as out:
        # In `root`: `python -m` puts the working directory first on the path.
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root)
        try:

            def alive() -> bool:
                if process.poll() is not None:
                    tail = log.read_text(errors="replace").splitlines()[-20:]
                    raise RuntimeError(f"the operator exited with {process.returncode}:\n" + "\n".join(tail))
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                        return True
                except OSError:
                    return False

            wait_until(alive, 60, "the operator's liveness endpoint", interval=0.25)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user and system)."""
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def operator_requests(kube: KubeApi) -> int:
    by_agent = kube.requests_by_agent
    return sum(count for agent, count in by_agent.items() if agent in OPERATOR_AGENTS)


def reconciled(kube: KubeApi, bridges: int, routes: int, apps_per_bridge: int) -> bool:
    items = kube.list(GROUP_VERSION, "JmsBridge", NAMESPACE)
    done = [
        b
        for b in items
        if (b.get("status") or {}).get("observedGeneration") == b["metadata"]["generation"]
        and (b.get("status") or {}).get("routeCount") == routes
    ]
    if len(done) < bridges:
        return False
    if len(kube.list(SPARK_VERSION, "SparkApplication", NAMESPACE)) < bridges * apps_per_bridge:
        return False
    accepted = [
        r
        for r in kube.list(GROUP_VERSION, "JmsBridgeRoute", NAMESPACE)
        if any(
            c["type"] == "Accepted" and c["status"] == "True"
            for c in (r.get("status") or {}).get("conditions", [])
        )
    ]
    return len(accepted) == bridges * routes


def all_ready(kube: KubeApi, bridges: int) -> bool:
    items = kube.list(GROUP_VERSION, "JmsBridge", NAMESPACE)
    ready = [
        b
        for b in items
        if any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in (b.get("status") or {}).get("conditions", [])
        )
    ]
    return len(ready) == bridges


QUIET_SECONDS = 5.0


def settle(kube: KubeApi, timeout: float) -> float:
    """Seconds until the operator has made no request for `QUIET_SECONDS` (its backlog handled)."""
    started = time.monotonic()
    count, since = operator_requests(kube), time.monotonic()
    while time.monotonic() - since < QUIET_SECONDS and time.monotonic() - started < timeout:
        time.sleep(0.5)
        if (now := operator_requests(kube)) != count:
            count, since = now, time.monotonic()
    return since - started


def write_directly(kube: KubeApi, applications: int) -> float:
    """Baseline: the seconds this client takes to write the objects the operator wrote (its ConfigMaps
    and SparkApplications, copied into a fresh namespace) straight to the same API server, no operator."""
    # The server's lists give their items without apiVersion and kind.
    objects = [
        {"apiVersion": "v1", "kind": "ConfigMap", **o} for o in kube.list("v1", "ConfigMap", NAMESPACE)
    ]
    objects += [
        {"apiVersion": SPARK_VERSION, "kind": "SparkApplication", **o}
        for o in kube.list(SPARK_VERSION, "SparkApplication", NAMESPACE)
    ]
    assert len(objects) >= applications, "the operator's objects are the baseline's input"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": BASELINE_NAMESPACE}})
    copies = [
        {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "metadata": {"name": obj["metadata"]["name"], "namespace": BASELINE_NAMESPACE},
            **{k: v for k, v in obj.items() if k in ("data", "spec")},
        }
        for obj in objects
    ]
    started = time.monotonic()
    for copy in copies:
        kube.create(copy)
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bridges", type=int, default=300)
    parser.add_argument("--routes", type=int, default=3)
    parser.add_argument("--standby", action="store_true", help="two SparkApplications per bridge")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--idle-seconds", type=float, default=60, help="0: no idle measurement")
    parser.add_argument(
        "--operator-root", type=Path, default=REPO, help="run the operator of another checkout (a comparison)"
    )
    args = parser.parse_args()
    apps_per_bridge = 2 if args.standby else 1

    with tempfile.TemporaryDirectory(prefix="operator-scale-") as tmp, ControlPlane() as plane:
        kube = KubeApi(plane)
        kube.install_crds(*sorted((REPO / "crds").glob("*.yaml")), installed_file())
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        every_namespace = ("allNamespaces=true", f"bridgeJob.namespaces={{{NAMESPACE}}}")
        identity = install_identity(kube, "jmsbridge-system", *every_namespace)
        kube.begin()
        log = Path(tmp) / "operator.log"
        with operator_process(kube, identity.kubeconfig, log, args.operator_root) as process:
            before = operator_requests(kube)
            cpu_before = cpu_seconds(process.pid)
            started = time.monotonic()
            for i in range(args.bridges):
                name = f"bridge-{i:04d}"
                kube.create(bridge(name, args.standby))
                for r in range(1, args.routes + 1):
                    kube.create(route(name, r))
            created_s = time.monotonic() - started
            wait_until(
                lambda: reconciled(kube, args.bridges, args.routes, apps_per_bridge),
                args.timeout,
                "every bridge reconciled",
                interval=1.0,
            )
            reconciled_s = time.monotonic() - started
            cpu_reconciled = cpu_seconds(process.pid) - cpu_before
            requests_reconciled = operator_requests(kube) - before

            # Play the spark-operator: every application starts running; with a standby, play the jobs
            # too: the primary of each bridge holds its Lease.
            running_started = time.monotonic()
            for app in kube.list(SPARK_VERSION, "SparkApplication", NAMESPACE):
                status = {"applicationState": {"state": "RUNNING"}, "driverInfo": {}}
                kube.patch_status(
                    SPARK_VERSION, "SparkApplication", app["metadata"]["name"], NAMESPACE, status
                )
            for i in range(args.bridges if args.standby else 0):
                kube.create(held_lease(f"bridge-{i:04d}", "primary/driver", namespace=NAMESPACE))
            wait_until(
                lambda: all_ready(kube, args.bridges), args.timeout, "every bridge Ready", interval=1.0
            )
            running_s = time.monotonic() - running_started
            requests_total = operator_requests(kube) - before
            by_resource = kube.requests_by_resource(*OPERATOR_AGENTS)
            # Ready comes before the operator has handled every event of the run (a standby's RUNNING,
            # say): at rest means once it has stopped asking for a while.
            settled_s = settle(kube, args.timeout)
            at_rest = kube.requests_by_resource(*OPERATOR_AGENTS)
            time.sleep(args.idle_seconds)  # a measurement of what happens while nothing changes
            idle = {
                what: count - at_rest.get(what, 0)
                for what, count in kube.requests_by_resource(*OPERATOR_AGENTS).items()
                if count > at_rest.get(what, 0)
            }
            peak = peak_rss_mib(process.pid)
        baseline_s = write_directly(kube, apps_per_bridge * args.bridges)

        result = {
            "operator": str(args.operator_root),
            "bridges": args.bridges,
            "routes_per_bridge": args.routes,
            "applications_per_bridge": apps_per_bridge,
            "create_s": round(created_s, 2),
            "reconciled_s": round(reconciled_s, 2),
            "running_s": round(running_s, 2),
            "requests_per_bridge": round(requests_total / args.bridges, 1),
            "requests_per_bridge_until_reconciled": round(requests_reconciled / args.bridges, 1),
            "requests_by_resource": by_resource,
            "idle_requests_per_bridge_per_minute": (
                round(
                    sum(n for what, n in idle.items() if not what.startswith("watch "))
                    / args.bridges
                    * 60
                    / args.idle_seconds,
                    2,
                )
                if args.idle_seconds
                else None
            ),
            "idle_requests_by_resource": idle,
            "settled_after_ready_s": round(settled_s, 1),
            "operator_peak_rss_mib": round(peak, 1),
            "operator_cpu_s_until_reconciled": round(cpu_reconciled, 2),
            "baseline_direct_write_s": round(baseline_s, 2),
            "reconciled_vs_baseline": round(reconciled_s / baseline_s, 2),
        }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
