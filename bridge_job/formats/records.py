"""A Kafka record as a JSON document, so that people and tools can read and write one in a file.

    {"key": "ID:1",
     "headers": [["jms.JMSDestination", "queue://orders"], ["jmsbridge.messageType", "TextMessage"]],
     "value": "hello"}

`headers` is a list of [name, value] pairs, in order (Kafka allows a name more than once). The key,
each header value and the value are a JSON string (its UTF-8 bytes), `{"base64": "..."}` for bytes that
are not UTF-8, or `null` (no key, no value; header values cannot be null). `key` and `headers` may be
left out.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from bridge_job.formats import FormatError, KafkaRecord, utf8


def record_document(record: KafkaRecord) -> dict[str, Any]:
    return {
        "key": _bytes_document(record.key),
        "headers": [[name, _bytes_document(value)] for name, value in record.headers],
        "value": _bytes_document(record.value),
    }


def _bytes_document(data: bytes | None) -> str | dict[str, str] | None:
    if data is None:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def record_of(doc: Any) -> KafkaRecord:
    """The record a parsed JSON document describes; FormatError names the offending field."""
    if not isinstance(doc, dict):
        raise FormatError("record: expected a JSON object with key, headers and value")
    for member in doc:
        if member not in ("key", "headers", "value"):
            raise FormatError(f"{member}: unknown member; expected key, headers or value")
    raw_headers = doc.get("headers") or []
    if not isinstance(raw_headers, list):
        raise FormatError("headers: expected a list of [name, value] pairs")
    headers = []
    for index, pair in enumerate(raw_headers):
        where = f"headers[{index}]"
        if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], str):
            raise FormatError(f"{where}: expected a [name, value] pair with a string name")
        value = _bytes_of(pair[1], f"{where}[1]")
        if value is None:
            raise FormatError(f'{where}[1]: a header value is a string or {{"base64": ...}}, not null')
        headers.append((pair[0], value))
    return KafkaRecord(
        value=_bytes_of(doc.get("value"), "value"), headers=headers, key=_bytes_of(doc.get("key"), "key")
    )


def _bytes_of(doc: Any, where: str) -> bytes | None:
    if doc is None:
        return None
    if isinstance(doc, str):
        return utf8(doc, where)
    if isinstance(doc, dict) and list(doc) == ["base64"] and isinstance(doc["base64"], str):
        try:
            return base64.b64decode(doc["base64"], validate=True)
        except (binascii.Error, ValueError) as error:
            raise FormatError(f"{where}.base64: not base64 ({error})") from None
    raise FormatError(f'{where}: expected a string, {{"base64": "..."}} or null')
