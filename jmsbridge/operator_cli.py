"""`jmsbridge operator | render | validate | crds`: the control plane from the command line.

- `operator` runs the kopf operator (the same as `kopf run -m jmsbridge_operator.main`), with the
  operator's own settings as options; it finds the cluster like kubectl does (in-cluster, else `$KUBECONFIG`).
- `render -f ...` prints, offline, as a YAML stream, exactly the objects the operator would create for the
  bridges and routes in the files (the operator's own planning and rendering functions); when anything is
  wrong it prints the problems instead, renders nothing and exits 1. `-o json`: one `List`, as kubectl.
- `validate -f ...` reports every problem with its file and field, and exits 1 when there is any.
  `-o json|yaml`: the verdict as one document on stdout (problems with document, reason, field, message).
- `crds` prints the CRDs generated from the models (`--write` rewrites `crds/` and the Helm chart's copy).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from bridge_job.config import API_GROUP, BRIDGE_KIND, ROUTE_KIND, ConfigError
from bridge_job.config.loading import read_documents
from bridge_job.config.validation import INVALID_SPEC, duplicate_message, duplicates, fault_line
from jmsbridge.files import add_file_argument

if TYPE_CHECKING:
    from jmsbridge_operator.conditions import Problem
    from jmsbridge_operator.planning import Plan


def register(commands: Any) -> None:
    """Add this module's subcommands to `commands` (an argparse subparsers action)."""
    operator = commands.add_parser(
        "operator",
        help="run the Kubernetes operator",
        description="Run the JmsBridge operator (the same as `kopf run -m jmsbridge_operator.main`).",
    )
    scope = operator.add_mutually_exclusive_group()
    scope.add_argument(
        "-n",
        "--namespace",
        dest="namespaces",
        action="append",
        default=[],
        metavar="NS",
        help="serve this namespace (repeat for several; globs like 'team-*' work)",
    )
    scope.add_argument(
        "-A", "--all-namespaces", action="store_true", help="serve every namespace (the default)"
    )
    operator.add_argument(
        "--liveness", metavar="URL", help="liveness endpoint, e.g. http://0.0.0.0:8080/healthz"
    )
    operator.add_argument(
        "--metrics-port", type=int, metavar="N", help="serve Prometheus metrics on this port"
    )
    operator.add_argument("--metrics-address", default="0.0.0.0", metavar="ADDR")
    operator.add_argument("--json-logs", action="store_true", help="log one JSON object per line")
    operator.add_argument(
        "--resync-seconds", type=float, metavar="S", help="full pass over every bridge (300)"
    )
    operator.add_argument(
        "--watch-timeout", type=int, metavar="S", help="restart watches after S seconds (300)"
    )
    operator.add_argument("--workers", type=int, metavar="N", help="handler threads (8)")
    operator.add_argument(
        "--kafka-check-interval",
        type=float,
        metavar="S",
        help="check each bridge's Kafka topics and permissions every S seconds (60)",
    )
    operator.add_argument(
        "--kafka-grace-period",
        type=float,
        metavar="S",
        help="Kafka unreachable this long is a hard failure that stops the bridge (300)",
    )
    operator.add_argument(
        "--secret-check-interval",
        type=float,
        metavar="S",
        help="read the Secrets each bridge's pods use every S seconds, and roll the bridge when one "
        "changed; 0: never (60)",
    )
    operator.add_argument(
        "--no-kafka-checks",
        action="store_true",
        help="start bridges without checking their Kafka side (when the operator cannot reach it)",
    )
    operator.add_argument(
        "--job-image",
        metavar="IMAGE",
        help="the job image of bridges that name none (ghcr.io/jmsbridge/bridge-job:<this version>)",
    )
    operator.add_argument(
        "--bridge-service-account",
        action="append",
        default=[],
        metavar="NAME",
        help="a service account bridges may run as besides their own (spec.spark.serviceAccount); "
        "repeat for more",
    )
    operator.add_argument(
        "--privileged-pods",
        action="store_true",
        help="let bridges' pods go beyond the Pod Security Standard restricted (root, hostPath volumes, "
        "added capabilities, privilege escalation)",
    )
    operator.add_argument(
        "--unmarked-secrets",
        action="store_true",
        help="let bridges use Secrets of their namespace not annotated jmsbridge.dev/bridges for them",
    )
    operator.add_argument(
        "--leader-election",
        action="store_true",
        help="run only while holding a Lease in the operator's namespace; other replicas stand by",
    )
    operator.add_argument(
        "--leader-election-namespace", metavar="NS", help="the Lease's namespace (default: $POD_NAMESPACE)"
    )
    operator.add_argument("--leader-election-lease", metavar="NAME", help="the Lease (jms-bridge-operator)")
    operator.add_argument(
        "--leader-election-lease-seconds", type=int, metavar="S", help="a standby takes over after S (15)"
    )
    verbosity = operator.add_mutually_exclusive_group()
    verbosity.add_argument("-v", "--verbose", action="store_true")
    verbosity.add_argument("-q", "--quiet", action="store_true")
    operator.set_defaults(run=run_operator)

    render = commands.add_parser(
        "render",
        help="print the objects the operator would create",
        description="Print, as a YAML stream, the ConfigMap and SparkApplications the operator would create "
        "for the JmsBridge and JmsBridgeRoute resources in the files (offline). Without a uid in the "
        "bridge's metadata the objects carry no ownerReference (the operator sets it). On any problem it "
        "renders nothing, prints the problems as validate does and exits 1.",
    )
    add_file_argument(render, "a YAML file with JmsBridge and JmsBridgeRoute resources (and their Secrets)")
    render.add_argument("-n", "--namespace", help="namespace for resources that name none")
    render.add_argument(
        "-o", "--output", choices=("yaml", "json"), default="yaml",
        help="yaml: a stream of documents (default); json: one List of them, as `kubectl get -o json`",
    )  # fmt: skip
    render.set_defaults(run=run_render)

    validate = commands.add_parser(
        "validate",
        help="check JmsBridge and JmsBridgeRoute files",
        description="Report every problem of the resources in the files, with file and field; exit 1 if any.",
    )
    add_file_argument(validate, "a YAML file with JmsBridge and JmsBridgeRoute resources")
    validate.add_argument("-n", "--namespace", help="namespace for resources that name none")
    validate.add_argument(
        "-o", "--output", choices=("text", "json", "yaml"), default="text",
        help="text: one line per problem on stderr (default); json, yaml: the verdict as one document on "
        "stdout (valid, counts, problems with document, reason, field and message, warnings)",
    )  # fmt: skip
    validate.set_defaults(run=run_validate)

    crds = commands.add_parser("crds", help="print (or --write) the CRDs generated from the models")
    crds.add_argument("--write", action="store_true", help="rewrite crds/ and the Helm chart's crds/")
    crds.add_argument("--check", action="store_true", help="exit 1 when the committed CRDs are stale")
    crds.set_defaults(run=run_crds)


# ---------------------------------------------------------------------------------------------------
# operator


def operator_environment(args: argparse.Namespace) -> dict[str, str]:
    """The operator's own settings travel as environment variables (so `kopf run` takes them too)."""
    from jmsbridge_operator import options

    env: dict[str, str] = {}
    if args.metrics_port is not None:
        env[options.ENV_METRICS_PORT] = str(args.metrics_port)
        env[options.ENV_METRICS_ADDRESS] = args.metrics_address
    given = {  # options passed on as they are, when given
        options.ENV_RESYNC_SECONDS: args.resync_seconds,
        options.ENV_WATCH_TIMEOUT: args.watch_timeout,
        options.ENV_WORKERS: args.workers,
        options.ENV_KAFKA_CHECK_INTERVAL: args.kafka_check_interval,
        options.ENV_KAFKA_GRACE_PERIOD: args.kafka_grace_period,
        options.ENV_SECRET_CHECK_INTERVAL: args.secret_check_interval,
        options.ENV_JOB_IMAGE: args.job_image or None,
        options.ENV_SERVICE_ACCOUNTS: ",".join(args.bridge_service_account) or None,
    }
    env |= {name: str(value) for name, value in given.items() if value is not None}
    switches = {  # flags that change a default
        options.ENV_KAFKA_CHECKS: ("false", args.no_kafka_checks),
        options.ENV_PRIVILEGED_PODS: ("true", args.privileged_pods),
        options.ENV_UNMARKED_SECRETS: ("true", args.unmarked_secrets),
    }
    env |= {name: value for name, (value, given_flag) in switches.items() if given_flag}
    return env


def run_operator(args: argparse.Namespace) -> int:
    os.environ.update(operator_environment(args))
    # Importing `main` registers the handlers, with the options just set.
    import jmsbridge_operator.main  # noqa: F401
    from jmsbridge_operator.election import Election, ElectionError, run_elected

    try:
        election = (
            Election.of(
                args.leader_election_namespace, args.leader_election_lease, args.leader_election_lease_seconds
            )
            if args.leader_election
            else None
        )
    except ElectionError as error:
        print(f"jmsbridge operator: {error}", file=sys.stderr)
        return 1
    import kopf

    log_format = kopf.LogFormat.JSON if args.json_logs else kopf.LogFormat.FULL
    kopf.configure(verbose=args.verbose, quiet=args.quiet, log_format=log_format)
    settings: dict[str, Any] = {
        "clusterwide": not args.namespaces,
        "namespaces": args.namespaces,
        "liveness_endpoint": args.liveness,
        "standalone": True,  # no kopf peering: --leader-election keeps other replicas out
    }
    if election is None:
        kopf.run(**settings)
        return 0
    try:
        return run_elected(election, settings, args.liveness)
    except ElectionError as error:
        print(f"jmsbridge operator: {error}", file=sys.stderr)
        return 1


# ---------------------------------------------------------------------------------------------------
# render and validate


@dataclass(frozen=True)
class Document:
    """One of our documents from the files; `order` is its place among all documents read."""

    order: int
    where: str  # `file` or `file#n`
    body: dict[str, Any]

    @property
    def namespace(self) -> str:
        return str((self.body.get("metadata") or {}).get("namespace") or "")

    @property
    def name(self) -> str:
        return str((self.body.get("metadata") or {}).get("name"))

    @property
    def identity(self) -> tuple[str, str, str]:
        """(kind, namespace, name): what Kubernetes holds one object for."""
        return str(self.body.get("kind")), self.namespace, self.name

    @property
    def key(self) -> tuple[str, str]:
        """(namespace, name); a route's name is the bridge it references."""
        from jmsbridge_operator.acceptance import referenced_bridge

        if self.body.get("kind") == ROUTE_KIND:
            return self.namespace, referenced_bridge(self.body) or ""
        return self.namespace, self.name


@dataclass
class Resources:
    """Our documents from the files, and what is wrong with them; other kinds are skipped."""

    bridges: list[Document] = field(default_factory=list)
    routes: list[Document] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)  # (document order, line)
    records: list[tuple[int, dict[str, str]]] = field(default_factory=list)  # the same, as data
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # said on stderr; no reason to refuse
    refused: list[Document] = field(default_factory=list)  # defined twice: reported, not judged

    def report(self, document: Document, problems: Iterable[Problem]) -> None:
        for problem in problems:
            self.add(document.order, document.where, problem.reason, problem.subject, problem.message)

    def add(self, order: int, where: str, reason: str, subject: str, message: str) -> None:
        said = fault_line(reason, message)
        self.problems.extend((order, f"{where}: {line}") for line in said.splitlines())
        record = {"document": where, "reason": reason, "field": subject, "message": message}
        self.records.append((order, record))

    def refuse_duplicates(self) -> None:
        """Report the bridges and routes defined twice, and judge none of them (the key is ambiguous)."""
        twice = duplicates(d.identity for d in [*self.bridges, *self.routes])
        for document in [*self.bridges, *self.routes]:
            if document.identity in twice:
                said = duplicate_message(*document.identity)
                self.add(document.order, document.where, INVALID_SPEC, "metadata.name", said)
        self.refused = [d for d in [*self.bridges, *self.routes] if d.identity in twice]
        self.bridges = [d for d in self.bridges if d.identity not in twice]
        self.routes = [d for d in self.routes if d.identity not in twice]

    def lines(self) -> list[str]:
        """The problems, in the order of the documents in the files."""
        return [line for _, line in sorted(self.problems, key=lambda problem: problem[0])]

    def verdict(self) -> dict[str, Any]:
        """What `validate -o json|yaml` prints."""
        records = [record for _, record in sorted(self.records, key=lambda record: record[0])]
        return {
            "valid": not self.problems,
            "counts": {BRIDGE_KIND: len(self.bridges), ROUTE_KIND: len(self.routes)},
            "problems": records,
            "warnings": self.warnings,
            "skipped": self.skipped,
        }


def load(files: Sequence[Path], namespace: str | None) -> Resources:
    found = Resources()
    order = 0
    for path in files:
        try:
            documents = read_documents(path)
        except ConfigError as error:  # its message names the file (and the line)
            order += 1  # after the documents of the files before it
            found.problems.append((order, str(error)))
            record = {"document": str(path), "reason": INVALID_SPEC, "field": "", "message": str(error)}
            found.records.append((order, record))
            continue
        for where, body in documents:
            order += 1
            kind = body.get("kind")
            if namespace and isinstance(body.get("metadata"), dict):
                body["metadata"].setdefault("namespace", namespace)
            if kind == BRIDGE_KIND:
                found.bridges.append(Document(order, where, body))
            elif kind == ROUTE_KIND:
                found.routes.append(Document(order, where, body))
            elif str(body.get("apiVersion") or "").partition("/")[0] == API_GROUP:
                said = f"kind: expected {BRIDGE_KIND} or {ROUTE_KIND}, got {kind!r}"
                found.add(order, where, INVALID_SPEC, "kind", said)
            else:
                found.skipped.append(f"{where}: {kind} (not ours)")
    found.refuse_duplicates()
    return found


def _check(found: Resources) -> list[Plan]:
    """Plan every bridge as the operator would, and report the problems its validation found."""
    from jmsbridge_operator.acceptance import judge_routes, route_name, route_problems
    from jmsbridge_operator.kafka_checks.gate import open_gate
    from jmsbridge_operator.planning import Observed, plan

    plans = []
    for bridge in found.bridges:
        mine = [route for route in found.routes if route.key == bridge.key]
        decided = plan(
            Observed(bridge.body, [route.body for route in mine]), open_gate, "1970-01-01T00:00:00Z"
        )
        found.report(bridge, decided.validation.problems)
        found.warnings += [f"{bridge.where}: warning: {w.message}" for w in decided.validation.warnings]
        found.warnings += [
            f"{bridge.where}: warning: {said}" for said in _unreadable_kafka_files(bridge.body)
        ]
        for route in mine:
            verdict = decided.validation.routes.verdicts[route_name(route.body)]
            if verdict.stalls:  # else the bridge is at fault, and its problems are reported
                found.report(route, verdict.problems)
        plans.append(decided)
    bridges = {bridge.key for bridge in found.bridges}
    for route in found.routes:
        if route.key in bridges:
            continue
        if found.bridges:  # its bridge is not in the files
            namespace, bridge_name = route.key
            judgement = judge_routes(bridge_name, None, [route.body], namespace=namespace or None)
            found.report(route, judgement.verdicts[route_name(route.body)].problems)
        else:  # routes alone: only their own specs can be checked
            found.report(route, route_problems(route.body))
    return plans


def _unreadable_kafka_files(body: dict[str, Any]) -> list[str]:
    """Why the operator's Kafka checks could not read a file the bridge's Kafka settings name: a warning,
    not a problem (the job may find it in its image), but the checks would stop the bridge with
    `CredentialsNotFound`."""
    from jmsbridge_operator.kafka_checks.mounted_files import KafkaFileUnreadable, mounted_files
    from pydantic import ValidationError

    from bridge_job.config import JmsBridge

    try:
        spec = JmsBridge.model_validate(body).spec
        mounted_files(spec.kafka, spec.spark.pod)
    except ValidationError:  # reported as the bridge's problems
        return []
    except KafkaFileUnreadable as unreadable:
        return [f"{unreadable} (with the operator's Kafka checks on, the bridge would not start)"]
    return []


class _Dumper(yaml.SafeDumper):
    """No anchors, and multi-line text (the job's config) as a readable literal block."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def _identity_objects(decided: Plan) -> list[dict[str, Any]]:
    made = decided.identity
    if made is None or not any(w.verb == "create" for w in decided.writes):
        return []
    return [*made.objects, *([made.lease] if made.lease is not None else [])]


def run_render(args: argparse.Namespace) -> int:
    found = load(args.files, args.namespace)
    plans = _check(found)
    for line in found.warnings:
        print(line, file=sys.stderr)
    if found.problems:  # rendering without the refused would drop them from `kubectl apply` unseen
        for line in found.lines():
            print(line, file=sys.stderr)
        print(f"{len(found.problems)} problem(s): nothing rendered", file=sys.stderr)
        return 1
    objects = [
        obj
        for decided in plans
        # The bridge's identity first (its pods run as it), but its key, which only the operator makes.
        for obj in [*_identity_objects(decided), *(w.body for w in decided.writes if w.verb == "create")]
    ]
    if not objects:
        print("no JmsBridge in the files: nothing to render", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2))
    else:
        sys.stdout.write(
            yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, explicit_start=True, width=1000)
        )
    return 0


def run_validate(args: argparse.Namespace) -> int:
    found = load(args.files, args.namespace)
    _check(found)
    if args.output != "text":
        verdict = found.verdict()
        if args.output == "json":
            print(json.dumps(verdict, indent=2))
        else:
            sys.stdout.write(yaml.dump(verdict, Dumper=_Dumper, sort_keys=False, width=1000))
        return 0 if verdict["valid"] else 1
    for line in found.warnings:
        print(line, file=sys.stderr)
    documents = [*found.bridges, *found.routes, *found.refused]
    if documents and not any(d.body.get("kind") == BRIDGE_KIND for d in documents):
        print("note: no JmsBridge in the files; routes were checked on their own", file=sys.stderr)
    if found.problems:
        lines = found.lines()
        for line in lines:
            print(line, file=sys.stderr)
        print(f"{len(lines)} problem(s)", file=sys.stderr)
        return 1
    print(f"ok: {len(found.bridges)} JmsBridge, {len(found.routes)} JmsBridgeRoute")
    return 0


# ---------------------------------------------------------------------------------------------------
# crds


def run_crds(args: argparse.Namespace) -> int:
    from jmsbridge_operator import crdgen

    if args.check or args.write:
        return crdgen.main(["--check"] if args.check else [])
    sys.stdout.write("".join(f"---\n{crdgen.dump(crd)}" for crd in crdgen.crds().values()))
    return 0
