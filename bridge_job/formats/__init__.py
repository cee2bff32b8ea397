"""Message formats: how a JMS message looks on the Kafka side (route field `format`).

Each format module (`native`, `basic`, `jsonmode`, `envelope`) offers `encode(message, origin) ->
KafkaRecord` and `decode(record, destination) -> JmsMessage`; `codecs.codec(format)` picks one for a
route. They are pure functions over plain data: no Spark, no brokers. docs/formats.md describes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


class FormatError(ValueError):
    """Input that a format cannot read or a message it cannot represent; the message says where."""


def utf8(text: str, where: str) -> bytes:
    """`text` as UTF-8. A lone surrogate (which a Java string may hold) has no UTF-8 form: refused."""
    try:
        return text.encode()
    except UnicodeEncodeError as error:
        raise FormatError(
            f"{where}: character {error.start} is a lone surrogate, which UTF-8 cannot carry"
        ) from None


def parse_json(data: bytes, where: str = "value") -> Any:
    """Strict JSON (no NaN literals), with the byte offset of the first problem."""
    try:
        text = data.decode()
    except UnicodeDecodeError as error:
        raise FormatError(f"{where} byte {error.start}: not UTF-8") from None
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        offset = len(text[: error.pos].encode())
        raise FormatError(f"{where} byte {offset}: invalid JSON: {error.msg}") from None
    except RecursionError:
        raise FormatError(f"{where}: JSON nested too deeply") from None
    except ValueError as error:  # e.g. an integer with more digits than Python converts
        raise FormatError(f"{where}: invalid JSON: {error}") from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON; write it as the string {name!r} with a types entry")


@dataclass(frozen=True, slots=True)
class KafkaRecord:
    value: bytes | None
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    key: bytes | None = None

    def header(self, name: str) -> bytes | None:
        """The last value of a header (Kafka allows repeats; the last one wins, as in Kafka clients)."""
        found = None
        for k, v in self.headers:
            if k == name:
                found = v
        return found
