"""The binary header protocol of nats-io/nats-jms-bridge: typed headers and a body in one byte string.

This module knows the bytes only; `envelope.py` maps them to JMS messages. The layout, as the reference
decoder (`MessageBuilder.initFromBytes`) reads it, all numbers big-endian:

    AB CD 01 00                 marker and version 1.0; without them the whole buffer is a plain body
    count                       signed byte; 0 or less means no headers, so at most 127
    count x (name, type, value):
      name                      signed byte: negative is the code of a well-known name (`NAME_CODES`),
                                otherwise that many bytes of UTF-8 name follow
      type                      signed byte, see `TypeCode`; -109 and above is itself a small int value
      value                     as the type says (strings: length, then UTF-8 bytes)
    body length                 int32
    body hash                   int32, Java's `Arrays.hashCode`-style h = 31*h + (b & 0xff), mod 2**32
    body                        body length bytes; anything after them is ignored, as the reference does

The reference decoder casts the well-known headers (`BRIDGE_timestamp` to long, `BRIDGE_mode` to int,
...) and gives up on the whole buffer when a cast fails, so `pack` writes, and `unpack` accepts, only
the types in `WELL_KNOWN_TYPES` for them. Strings are decoded like Java's `new String(bytes, UTF_8)`:
invalid sequences become U+FFFD rather than errors, because the reference reads them.

The reference encoder has quirks that its own decoder misreads (string lengths counted in characters,
short strings up to 511 characters, small ints written in the reserved range, no empty strings); `pack`
writes lengths in bytes, uses each form only within its range, and refuses what has no correct encoding.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bridge_job.formats import FormatError, utf8
from bridge_job.message import Property, PropertyType

MARKER = b"\xab\xcd\x01\x00"
MAX_HEADERS = 127  # the count is a signed byte
MAX_NAME_BYTES = 127  # so is a name's length; negative lengths are codes
MAX_SHORT_STRING_BYTES = 127
MAX_STRING_BYTES = 0xFFFF
SMALL_INT_MIN = -109  # type bytes from here up are int values, not type codes
MAX_BODY_BYTES = 0x7FFFFFFF

DELIVERY_TIME = "BRIDGE_deliveryTime"
TIMESTAMP = "BRIDGE_timestamp"
MODE = "BRIDGE_mode"
EXPIRATION = "BRIDGE_expirationTime"
TYPE = "BRIDGE_type"
PRIORITY = "BRIDGE_priority"
REDELIVERED = "BRIDGE_redelivered"
CORRELATION_ID = "BRIDGE_correlation_id"

NAME_CODES: dict[str, int] = {
    DELIVERY_TIME: -128,
    TIMESTAMP: -127,
    MODE: -126,
    EXPIRATION: -125,
    TYPE: -124,
    PRIORITY: -123,
    REDELIVERED: -122,
    CORRELATION_ID: -121,
    "ENV": -120,
    "H1": -119,
    "H2": -118,
    "H3": -116,
    "H4": -115,
    "ENVIRONMENT": -114,
}
CODE_NAMES: dict[int, str] = {code: name for name, code in NAME_CODES.items()}

WELL_KNOWN_TYPES: dict[str, PropertyType] = {
    DELIVERY_TIME: PropertyType.LONG,
    TIMESTAMP: PropertyType.LONG,
    MODE: PropertyType.INT,
    EXPIRATION: PropertyType.LONG,
    TYPE: PropertyType.STRING,
    PRIORITY: PropertyType.INT,
    REDELIVERED: PropertyType.BOOLEAN,
    CORRELATION_ID: PropertyType.STRING,
}


class TypeCode(enum.IntEnum):
    SHORT_STRING = -110
    STRING = -111
    TRUE = -112
    FALSE = -113
    BYTE = -114
    SHORT = -116
    INT = -118
    LONG = -120
    FLOAT = -122
    DOUBLE = -123


_NUMBERS: dict[int, tuple[PropertyType, struct.Struct]] = {
    TypeCode.BYTE: (PropertyType.BYTE, struct.Struct(">b")),
    TypeCode.SHORT: (PropertyType.SHORT, struct.Struct(">h")),
    TypeCode.INT: (PropertyType.INT, struct.Struct(">i")),
    TypeCode.LONG: (PropertyType.LONG, struct.Struct(">q")),
    TypeCode.FLOAT: (PropertyType.FLOAT, struct.Struct(">f")),
    TypeCode.DOUBLE: (PropertyType.DOUBLE, struct.Struct(">d")),
}
_CODE_OF_NUMBER = {type_: code for code, (type_, _) in _NUMBERS.items()}
_BODY_HEAD = struct.Struct(">iI")
_U16 = struct.Struct(">H")
_MASK32 = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class Envelope:
    headers: dict[str, Property]
    body: bytes
    body_offset: int  # where the body starts in the buffer, for error messages about it


def body_hash(body: bytes) -> int:
    """The reference's body checksum as an unsigned 32-bit number (its int32, two's complement)."""
    h = 0
    for byte in body:
        h = (31 * h + byte) & _MASK32
    return h


def _check_type(name: str, prop: Property, where: str) -> None:
    expected = WELL_KNOWN_TYPES.get(name)
    if expected is not None and prop.type is not expected:
        raise FormatError(f"{where}: header {name!r} must be of type {expected.value}, not {prop.type.value}")


# ---------------------------------------------------------------------------------------------------
# Writing


def pack(headers: Mapping[str, Property], body: bytes) -> bytes:
    """The envelope bytes; FormatError names the header the reference decoder could not read back."""
    if len(headers) > MAX_HEADERS:
        raise FormatError(
            f"envelope: {len(headers)} headers, at most {MAX_HEADERS} fit (the count is a byte)"
        )
    if len(body) > MAX_BODY_BYTES:
        raise FormatError(f"envelope: body of {len(body)} bytes exceeds the int32 length field")
    out = bytearray(MARKER)
    out.append(len(headers))
    for name, prop in headers.items():
        _check_type(name, prop, "envelope")
        _pack_name(out, name)
        _pack_value(out, name, prop)
    out += _BODY_HEAD.pack(len(body), body_hash(body))
    out += body
    return bytes(out)


def _pack_name(out: bytearray, name: str) -> None:
    code = NAME_CODES.get(name)
    if code is not None:
        out.append(code & 0xFF)
        return
    data = utf8(name, f"envelope header name {name!r}")
    if len(data) > MAX_NAME_BYTES:
        raise FormatError(f"envelope header {name!r}: name is {len(data)} UTF-8 bytes, at most 127 fit")
    out.append(len(data))
    out += data


def _pack_value(out: bytearray, name: str, prop: Property) -> None:
    type_, value = prop.type, prop.value
    if type_ is PropertyType.STRING:
        data = utf8(str(value), f"envelope header {name!r}")
        if not data:
            raise FormatError(
                f"envelope header {name!r}: empty strings have no encoding (length must be >= 1)"
            )
        if len(data) <= MAX_SHORT_STRING_BYTES:
            out += bytes((TypeCode.SHORT_STRING & 0xFF, len(data)))
        elif len(data) <= MAX_STRING_BYTES:
            out.append(TypeCode.STRING & 0xFF)
            out += _U16.pack(len(data))
        else:
            raise FormatError(
                f"envelope header {name!r}: string of {len(data)} UTF-8 bytes, at most 65535 fit"
            )
        out += data
    elif type_ is PropertyType.BOOLEAN:
        out.append((TypeCode.TRUE if value else TypeCode.FALSE) & 0xFF)
    elif type_ is PropertyType.INT and isinstance(value, int) and SMALL_INT_MIN <= value <= 127:
        out.append(value & 0xFF)  # the "no cost int": the type byte is the value
    else:
        code = _CODE_OF_NUMBER[type_]
        out.append(code & 0xFF)
        out += _NUMBERS[code][1].pack(value)


# ---------------------------------------------------------------------------------------------------
# Reading


class _Reader:
    """A cursor over the buffer that checks every length against what is left before taking bytes."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int) -> None:
        self.data = data
        self.pos = pos

    def _advance(self, size: int, what: str) -> int:
        """Where `size` bytes start; FormatError if fewer are left."""
        start = self.pos
        if size > len(self.data) - start:
            left = len(self.data) - start
            raise FormatError(f"envelope byte {start}: {what} needs {size} bytes, only {left} left")
        self.pos = start + size
        return start

    def take(self, size: int, what: str) -> bytes:
        start = self._advance(size, what)
        return self.data[start : self.pos]

    def signed_byte(self, what: str) -> int:
        raw = self.data[self._advance(1, what)]
        return raw - 256 if raw > 127 else raw

    def unpack(self, layout: struct.Struct, what: str) -> tuple[Any, ...]:
        return layout.unpack_from(self.data, self._advance(layout.size, what))


def unpack(data: bytes) -> Envelope | None:
    """The envelope in `data`, or None when `data` does not start with the marker (a plain body)."""
    if not data.startswith(MARKER):
        return None
    reader = _Reader(data, len(MARKER))
    count = reader.signed_byte("header count")
    headers: dict[str, Property] = {}
    for index in range(count):  # a negative count means none, as in the reference
        start = reader.pos
        name = _read_name(reader, index)
        prop = _read_value(reader, name)
        _check_type(name, prop, f"envelope byte {start}")
        headers[name] = prop  # a repeated name overwrites, as in the reference's HashMap
    head = reader.pos
    length, expected_hash = reader.unpack(_BODY_HEAD, "body length and hash")
    if length < 0:
        raise FormatError(f"envelope byte {head}: body length {length} is negative")
    body = reader.take(length, "body")
    actual_hash = body_hash(body)
    if actual_hash != expected_hash:
        raise FormatError(
            f"envelope byte {head + 4}: body hash {_int32(expected_hash)} does not match the body's "
            f"{_int32(actual_hash)}"
        )
    return Envelope(headers, body, reader.pos - len(body))


def _int32(unsigned: int) -> int:
    return unsigned - (1 << 32) if unsigned >= 1 << 31 else unsigned


def _read_name(reader: _Reader, index: int) -> str:
    start = reader.pos
    length = reader.signed_byte(f"header {index} name")
    if length < 0:
        name = CODE_NAMES.get(length)
        if name is None:
            raise FormatError(f"envelope byte {start}: header name code {length} is not a well-known name")
        return name
    return reader.take(length, f"header {index} name").decode(errors="replace")


def _read_value(reader: _Reader, name: str) -> Property:
    start = reader.pos
    code = reader.signed_byte(f"header {name!r} type")
    if code >= SMALL_INT_MIN:
        return Property(PropertyType.INT, code)
    if code == TypeCode.SHORT_STRING or code == TypeCode.STRING:
        length_at = reader.pos
        if code == TypeCode.SHORT_STRING:
            length = reader.signed_byte(f"header {name!r} string length")
        else:
            (length,) = reader.unpack(_U16, f"header {name!r} string length")
        if length < 1:
            raise FormatError(
                f"envelope byte {length_at}: header {name!r} string length {length} is not >= 1"
            )
        return Property(
            PropertyType.STRING, reader.take(length, f"header {name!r} string").decode(errors="replace")
        )
    if code == TypeCode.TRUE or code == TypeCode.FALSE:
        return Property(PropertyType.BOOLEAN, code == TypeCode.TRUE)
    number = _NUMBERS.get(code)
    if number is None:
        raise FormatError(f"envelope byte {start}: header {name!r} has unknown type code {code}")
    type_, layout = number
    return Property(type_, reader.unpack(layout, f"header {name!r} {type_.value}")[0])
