"""Kafka headers packed into one binary column between the stages of the Spark query.

Spark never looks inside the headers; it only carries them from the journal source to the routing
stage and from there to the sink. A nested `ARRAY<STRUCT<key, value>>` column costs Spark a conversion
per header per row at each stage boundary; one opaque BINARY column costs it nothing, and packing is
cheap in Python. Layout, repeated per header: name length (u16), name (UTF-8), value length (u32), value.
"""

from __future__ import annotations

import struct

_NAME = struct.Struct(">H")
_VALUE = struct.Struct(">I")


def pack_headers(headers: list[tuple[str, bytes]]) -> bytes:
    parts: list[bytes] = []
    for name, value in headers:
        encoded = name.encode()
        parts += (_NAME.pack(len(encoded)), encoded, _VALUE.pack(len(value)), value)
    return b"".join(parts)


def unpack_headers(blob: bytes) -> list[tuple[str, bytes]]:
    headers: list[tuple[str, bytes]] = []
    at, end = 0, len(blob)
    while at < end:
        (size,) = _NAME.unpack_from(blob, at)
        at += 2
        name = blob[at : at + size].decode()
        at += size
        (size,) = _VALUE.unpack_from(blob, at)
        at += 4
        headers.append((name, blob[at : at + size]))
        at += size
    if at != end:
        raise ValueError(f"header blob of {end} bytes is truncated at byte {at}")
    return headers
