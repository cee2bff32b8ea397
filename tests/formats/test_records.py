"""Kafka records as JSON documents (what `jmsbridge decode/encode` read and write for native)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge_job.formats import FormatError, KafkaRecord
from bridge_job.formats.records import record_document, record_of
from tests.support.examples import examples

_bytes = st.none() | st.binary(max_size=20) | st.text(max_size=20).map(str.encode)


def test_document() -> None:
    record = KafkaRecord(value=b"\xff", headers=[("a", b"x"), ("a", b"")], key=b"k")
    assert record_document(record) == {
        "key": "k",
        "headers": [["a", "x"], ["a", ""]],
        "value": {"base64": "/w=="},
    }


@settings(max_examples=examples(100), deadline=None)
@given(_bytes, st.lists(st.tuples(st.text(max_size=10), st.binary(max_size=10))), _bytes)
def test_round_trip(value: bytes | None, headers: list[tuple[str, bytes]], key: bytes | None) -> None:
    record = KafkaRecord(value=value, headers=headers, key=key)
    assert record_of(record_document(record)) == record


def test_minimal() -> None:
    assert record_of({"value": "x"}) == KafkaRecord(value=b"x")


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        ([], r"record: expected a JSON object"),
        ({"val": 1}, r"val: unknown member"),
        ({"headers": {"a": "b"}}, r"headers: expected a list"),
        ({"headers": [["a"]]}, r"headers\[0\]: expected a \[name, value\] pair"),
        ({"headers": [[1, "b"]]}, r"headers\[0\]: expected a \[name, value\] pair"),
        ({"headers": [["a", None]]}, r"headers\[0\]\[1\]: a header value is a string"),
        ({"headers": [["a", 5]]}, r"headers\[0\]\[1\]: expected a string"),
        ({"value": {"base64": "!"}}, r"value.base64: not base64"),
        ({"value": {"base64": "AA==", "x": 1}}, r"value: expected a string"),
        ({"key": "\ud800"}, r"key: character 0 is a lone surrogate"),
    ],
)
def test_malformed(doc: object, error: str) -> None:
    with pytest.raises(FormatError, match=error):
        record_of(doc)
