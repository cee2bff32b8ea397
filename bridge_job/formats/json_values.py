"""JSON in and out for the formats that write it (`json`, and `native`'s Map and Stream bodies): one strict
reader, one compact writer, and how a non-finite number is written, since JSON has no literal for it."""

from __future__ import annotations

import json
import math
from typing import Any

from bridge_job.formats import FormatError

ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def written(value: Any) -> Any:
    """A value as JSON holds it: a non-finite float as the string "NaN", "Infinity" or "-Infinity"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    return value


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


def floating(value: Any, where: str) -> float:
    """A JSON number, or one of the non-finite strings, as a double."""
    if isinstance(value, str) and value in NON_FINITE:
        return NON_FINITE[value]
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise FormatError(f"{where}: expected a number, NaN, Infinity or -Infinity, got {kind(value)}")
    try:
        return float(value)
    except OverflowError:
        raise FormatError(f"{where}: {value} is out of range for a double") from None


def kind(value: Any) -> str:
    """A JSON value's kind for error messages, with a short excerpt."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    text = json.dumps(value, ensure_ascii=False)
    named = "a string" if isinstance(value, str) else "a number"
    return f"{named} {text if len(text) <= 40 else text[:37] + '...'}"
