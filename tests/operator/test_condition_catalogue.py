"""The condition catalogue against the code that makes conditions and the docs that explain them.

Three ways a status word goes astray, each a test: the code makes a condition with a type or reason the
catalogue lacks (read from the source with `ast`, so a new `Condition(...)` anywhere is seen); a reason of
the catalogue is missing from docs/operator.md's Status section; a docs table names a reason the
catalogue does not have (a reason renamed or gone). docs/troubleshooting.md is held to every reason
word of the code by test_troubleshooting.py; its tables are read here too, for stale reasons.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
from pathlib import Path
from types import ModuleType
from typing import Any

from jmsbridge_operator import condition_catalogue as catalogue

from bridge_job.kafka.refusals import RefusalKind
from tests.operator.helpers import REPO

PACKAGE = REPO / "operator" / "jmsbridge_operator"
OPERATOR_DOC = REPO / "docs" / "operator.md"
TROUBLESHOOTING = REPO / "docs" / "troubleshooting.md"

TYPE, REASON = "type", "reason"
# The calls that carry a condition's type or reason into a status, and where: argument positions and
# keywords. A Problem's reason and a rollout's Progress become a route's or a bridge's reason, a
# System's are the job's connection conditions, `held` and `stalled` close the gate or stall a bridge.
CARRIERS: dict[str, dict[int | str, str]] = {
    "Condition": {0: TYPE, TYPE: TYPE, 2: REASON, REASON: REASON},
    "Problem": {0: REASON, REASON: REASON},
    "Progress": {0: REASON, REASON: REASON},
    "System": {1: TYPE, "condition": TYPE, 2: REASON, REASON: REASON},
    "GateVerdict": {1: REASON, REASON: REASON},
    "held": {0: REASON, REASON: REASON},
    "stalled": {0: REASON, REASON: REASON},
    "_unreachable": {1: REASON, REASON: REASON},  # kafka_checks/evaluation.py: Kafka's or the registry's
}
CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*")
WORD = re.compile(r"`([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)*)`")
# The columns of the docs' condition tables that hold reasons (the others are prose).
REASON_COLUMNS = {"reason", "other conditions", "conditions", "Ready", "Reconciling / Stalled"}
# Reasons made outside the operator's code and passed on as words (`fault.reason`, `said.reason`).
PASSED_ON = {
    catalogue.INVALID_MATCH: "the job's validation rules, through acceptance.problem_of",
    catalogue.DUPLICATE_ORDER: "the job's validation rules, through acceptance.problem_of",
    catalogue.JMS_AUTHENTICATION_FAILED: "the job's stop report, through status._failed_conditions",
    catalogue.JMS_TLS_FAILED: "the job's stop report, through status._failed_conditions",
    catalogue.KAFKA_AUTHENTICATION_FAILED: "the probe's refusal (RefusalKind), through evaluation.evaluate",
    catalogue.KAFKA_TLS_FAILED: "the probe's refusal (RefusalKind), through evaluation.evaluate",
}


# ---------------------------------------------------------------------------------------------------
# The code


@dataclasses.dataclass(frozen=True)
class Word:
    """A constant the code gives as a condition's type or reason, and what it is at run time."""

    where: str  # path:line
    kind: str  # TYPE or REASON
    source: str  # `READY`, `Reason.VERIFIED.value`, `"Running"`
    value: Any
    literal: bool


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _given(node: ast.AST) -> list[tuple[str, ast.expr]]:
    """(type or reason, the expression) a node gives: a carrier call's arguments, and `reason = ...`."""
    if isinstance(node, ast.Assign):
        named = [t for t in node.targets if isinstance(t, ast.Name) and t.id == REASON]
        return [(REASON, node.value)] if named else []
    if not isinstance(node, ast.Call):
        return []
    where = CARRIERS.get(_callee(node) or "", {})
    args = [(where[i], arg) for i, arg in enumerate(node.args) if i in where]
    return args + [(where[k.arg], k.value) for k in node.keywords if k.arg in where]


def _constants(node: ast.expr) -> list[ast.expr]:
    """The literals and names of constants in an expression (`READY`, `catalogue.READY`,
    `Reason.VERIFIED.value`, both sides of `A if failed else B`); anything else (a parameter,
    `gate.reason`) is a word passed on, judged where it was made."""
    if isinstance(node, ast.IfExp):
        return _constants(node.body) + _constants(node.orelse)
    if isinstance(node, ast.Constant):
        return [node]
    dotted: list[str] = []
    leaf = node
    while isinstance(leaf, ast.Attribute):
        dotted.insert(0, leaf.attr)
        leaf = leaf.value
    if not isinstance(leaf, ast.Name):
        return []
    last = [name for name in [leaf.id, *dotted] if name != "value"][-1]  # an enum member's value
    return [node] if CONSTANT.fullmatch(last) else []


def _module(path: Path) -> ModuleType:
    return importlib.import_module(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))


def words_in_code() -> list[Word]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for kind, given in _given(node):
                for constant in _constants(given):
                    source = ast.unparse(constant)
                    # A name is what its module makes of it: a constant kept beside the catalogue with
                    # another value is caught too.
                    value = eval(source, vars(_module(path)))  # the operator's own source
                    where = f"{path.relative_to(REPO)}:{constant.lineno}"
                    found.append(Word(where, kind, source, value, isinstance(constant, ast.Constant)))
    return found


def test_the_code_makes_conditions_only_with_catalogued_words() -> None:
    known = {TYPE: set(catalogue.TYPES), REASON: set(catalogue.REASONS)}
    found = words_in_code()
    strays = [f"{w.where}: {w.kind} {w.source} = {w.value!r}" for w in found if w.value not in known[w.kind]]
    assert strays == [], "add them to operator/jmsbridge_operator/condition_catalogue.py"
    literals = [f"{w.where}: {w.source}" for w in found if w.literal]
    assert literals == [], "name them with the catalogue's constants"


def test_every_catalogued_word_is_made_by_the_code() -> None:
    """So that the catalogue (and the docs after it) names no word the operator never writes."""
    found = words_in_code()
    assert {w.value for w in found if w.kind == TYPE} == set(catalogue.TYPES)
    made = {w.value for w in found if w.kind == REASON}
    assert sorted(set(catalogue.REASONS) - made - set(PASSED_ON)) == []
    assert sorted(made & set(PASSED_ON)) == []  # named by the operator's code now: no longer passed on
    assert {kind.value for kind in RefusalKind} <= set(PASSED_ON)


def test_every_constant_of_the_catalogue_is_in_its_lists() -> None:
    constants = {
        value
        for name, value in vars(catalogue).items()
        if CONSTANT.fullmatch(name) and isinstance(value, str)
    }
    assert constants == set(catalogue.TYPES) | set(catalogue.REASONS)
    for reason in catalogue.REASONS.values():
        assert reason.types and set(reason.types) <= set(catalogue.TYPES), reason
        assert reason.set_by, reason


# ---------------------------------------------------------------------------------------------------
# The docs


def section(text: str, heading: str) -> str:
    """From the `## heading` to the next heading of its level."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def tables(text: str) -> list[list[dict[str, str]]]:
    """The markdown tables of `text`, each as its rows, a row as {header: cell}."""
    found: list[list[dict[str, str]]] = []
    lines: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            lines.append(line)
            continue
        if len(lines) > 2:
            split = [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in lines]
            header = split[0]
            assert all(len(row) == len(header) for row in split[2:]), f"a table's cells: {lines[0]}"
            found.append([dict(zip(header, row, strict=True)) for row in split[2:]])
        lines = []
    return found


def reasons_in_tables(text: str) -> set[str]:
    return {
        word
        for table in tables(text)
        for row in table
        for column, cell in row.items()
        if column in REASON_COLUMNS
        for word in WORD.findall(cell)
    }


def operator_status() -> str:
    return section(OPERATOR_DOC.read_text(encoding="utf-8"), "Status")


def troubleshooting_conditions() -> str:
    """The page's condition tables: everything before its Events, whose reasons are no conditions'."""
    text = TROUBLESHOOTING.read_text(encoding="utf-8")
    return text[: text.index("\n## Events\n")]


def test_every_catalogued_word_is_in_the_operator_docs() -> None:
    written = set(WORD.findall(operator_status()))
    assert sorted(set(catalogue.REASONS) - written) == []
    assert sorted(set(catalogue.TYPES) - written) == []


def test_the_docs_tables_name_only_catalogued_reasons() -> None:
    status = operator_status()
    assert len(tables(status)) >= 6  # JmsBridge, ActiveInstance, rollout, connections, claim, route
    for text in (status, troubleshooting_conditions()):
        named = reasons_in_tables(text)
        assert {"Running", "AwaitingLease", "Reconnecting", "BridgeNotFound"} <= named
        assert sorted(named - set(catalogue.REASONS)) == []


def test_the_operator_docs_say_the_table_is_checked() -> None:
    assert "operator/jmsbridge_operator/condition_catalogue.py" in operator_status()
