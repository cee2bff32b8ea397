"""Message formats: how a JMS message looks on the Kafka side (route field `format`).

Each format module offers `encode(message, ...) -> KafkaRecord` and `decode(record, ...) -> JmsMessage`.
They are pure functions over plain data: no Spark, no brokers.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class FormatError(ValueError):
    """Input that a format cannot read or a message it cannot represent; the message says where."""


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
