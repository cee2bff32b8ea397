"""The schema registry's wire format, which Kafka's own serializers write: a zero byte, the schema's id
in the registry (4 bytes, big-endian), then the payload (Avro binary or JSON text).

The ids come from the registry when the bridge registers its schemas (`SchemaIds`, one pair per topic);
a reader finds the writer's schema by the id (`SchemaLookup`, which the registry door caches).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bridge_job.config import Format
from bridge_job.formats import FormatError

MAGIC = 0
HEADER_SIZE = 5


@dataclass(frozen=True, slots=True)
class SchemaIds:
    """The registry's ids of the value and key schemas a topic's records are written with; no key schema
    when the route keys its records itself (a header or property as text)."""

    value: int
    key: int | None = None


# The schema text the registry holds under an id; raises what the registry door raises.
SchemaLookup = Callable[[int], str]


class Schemas(Protocol):
    """The registry as the flows use it (bridge_job/kafka/registry.py): each asked once, then cached."""

    def ids(self, topic: str, fmt: Format, keyed: bool) -> SchemaIds:
        """The ids of the bridge's value schema in `fmt` for records of `topic`, and with `keyed` of its key
        schema (the Key record is the key)."""
        ...

    def schema(self, schema_id: int) -> str:
        """A writer's schema by its id; FormatError when the registry has none under it."""
        ...


def framed(schema_id: int, payload: bytes) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + payload


def unframed(data: bytes | None, where: str) -> tuple[int, bytes]:
    """The schema id and the payload of a record's key or value."""
    if data is None:
        raise FormatError(f"{where}: missing (a null record)")
    if len(data) < HEADER_SIZE or data[0] != MAGIC:
        raise FormatError(
            f"{where}: not in the schema registry's wire format (a zero byte, then a 4-byte schema id)"
        )
    return int.from_bytes(data[1:HEADER_SIZE], "big"), data[HEADER_SIZE:]
