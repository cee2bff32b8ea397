"""docs/troubleshooting.md names every reason the operator can write into a condition or an Event.

The reasons are read from the code, not from a list kept beside it: every string constant of the operator
package, and of the job's modules whose reasons the operator passes on (the health report's, the
validation faults'), that is one CamelCase word. What such a word is when it is no reason (a kind, an enum
value of the spark-operator, a printer column) is said below, once; a new reason anywhere fails here until
the page says what to do about it.
"""

from __future__ import annotations

import ast
import re

from tests.operator.helpers import REPO

DOC = REPO / "docs" / "troubleshooting.md"
SOURCES = [
    *sorted((REPO / "operator" / "jmsbridge_operator").rglob("*.py")),
    REPO / "bridge_job" / "config" / "names.py",  # the job's health report: Connected, CheckpointMismatch...
    REPO / "bridge_job" / "config" / "validation.py",  # the faults' reasons: InvalidMatch, DuplicateOrder...
]
CAMEL_WORD = re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z]*)*")

NOT_REASONS = {
    # condition statuses and Event types
    "True",
    "False",
    "Unknown",
    "Normal",
    "Warning",
    # kinds and the CRDs' scope, list kind suffix and printer columns (crdgen.py)
    "JmsBridge",
    "JmsBridgeRoute",
    "ConfigMap",
    "Secret",  # where a bridge's Kafka TLS file is (kafka_checks/mounted_files.py)
    "SparkApplication",
    "CustomResourceDefinition",
    # a bridge's identity (identity.py, provisioning.py), and the API server's reason for a 409
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "Lease",
    "Opaque",
    "Conflict",
    "Namespaced",
    "List",
    "Status",
    "Active",
    "Routes",
    "Age",
    "Reason",
    "Failovers",
    "Bridge",
    "Order",
    "Direction",
    "Topic",
    # the spark-operator's enums and Kubernetes' values the operator renders or reads
    "Python",
    "Java",
    "Scala",
    "Always",
    "Never",
    "OnFailure",
    "IfNotPresent",
    "OnRootMismatch",
    "RuntimeDefault",
    "Localhost",
    # status.checkpointReset.state, and the metric label of API errors (`Api<status>`)
    "Requested",
    "Done",
    "Api",
}


def reasons_in_code() -> set[str]:
    words = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and CAMEL_WORD.fullmatch(node.value)
            ):
                words.add(node.value)
    return words - NOT_REASONS


def test_every_reason_in_the_code_is_in_the_troubleshooting_page() -> None:
    documented = set(re.findall(r"`([A-Z][A-Za-z]+)`", DOC.read_text(encoding="utf-8")))
    found = reasons_in_code()
    assert {"InvalidSpec", "RolloutFailed", "TopicNotFound", "CheckpointMismatch", "DriftRepaired"} <= found
    assert sorted(found - documented) == []


def test_no_word_is_excused_that_the_code_no_longer_has() -> None:
    words = set()
    for path in SOURCES:
        words |= {
            node.value
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        }
    assert sorted(NOT_REASONS - words) == []


def test_the_operator_docs_link_the_page() -> None:
    for page in ("operator.md", "upgrading.md"):
        assert "troubleshooting.md" in (REPO / "docs" / page).read_text(encoding="utf-8"), page
