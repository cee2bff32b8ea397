"""Message formats: how a JMS message looks on the Kafka side (route field `format`).

Each format module (`native`, `basic`, `jsonmode`, `envelope`) offers `encode(message, origin) ->
KafkaRecord` and `decode(record, destination) -> JmsMessage`; `codecs.codec(format)` picks one for a
route. They are pure functions over plain data: no Spark, no brokers. docs/formats.md describes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
