"""`jmsbridge decode` and `jmsbridge encode`: look inside bridged and dead-lettered messages, and make them.

A message is shown as the `json` format's document (headers, typed properties, `text` or base64
`bytes`), pretty-printed; `encode` reads the same document. A Kafka record, needed for `native` whose
headers are the message, is the JSON document of `bridge_job.formats.records`. docs/formats.md has both.
Problems are one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bridge_job.message import Destination

# bridge_job.config.Format without importing pydantic; avro and jsonSchema need the bridge's schema registry.
FORMATS = ("native", "basic", "json", "envelope")
USAGE_ERROR = 2


def register(commands: Any) -> None:
    decode = commands.add_parser(
        "decode",
        help="print a bridged message as JSON",
        description="Print the JMS message a Kafka record value (or, with --record, a whole record) holds.",
    )
    _common(decode, record="FILE is a Kafka record as JSON", destination="if the record has none")
    decode.add_argument(
        "file", metavar="FILE", help="the record value's bytes, or the record as JSON; - is stdin"
    )
    decode.set_defaults(run=run_decode)

    encode = commands.add_parser(
        "encode",
        help="write the bytes of a message given as JSON",
        description="Write the Kafka record value for a message (with --record: the whole record as JSON).",
    )
    _common(encode, record="write the Kafka record as JSON", destination="if the JSON has none")
    encode.add_argument("--origin", metavar="BRIDGE_ID", help="set the jmsbridge.origin header")
    encode.add_argument("-o", "--output", metavar="FILE", help="where to write (default: stdout)")
    encode.add_argument("file", metavar="FILE.json", help="the message as JSON; - is stdin")
    encode.set_defaults(run=run_encode)


def _common(command: argparse.ArgumentParser, *, record: str, destination: str) -> None:
    """The options both directions take."""
    command.add_argument("--format", required=True, choices=FORMATS, help="the route's format")
    command.add_argument("--record", action="store_true", help=f"{record} (always so for native)")
    command.add_argument("--destination", metavar="URI", help=f"queue://NAME or topic://NAME, {destination}")


def run_decode(args: argparse.Namespace) -> int:
    from bridge_job.config import Format
    from bridge_job.formats import KafkaRecord, jsonmode, records
    from bridge_job.formats.codecs import codec
    from bridge_job.formats.json_values import parse_json

    try:
        data = _read(args.file)
        unnamed = _unnamed()
        destination = _destination(args.destination) or unnamed
        if args.record or args.format == "native":
            record = records.record_of(parse_json(data, "record"))
        else:
            record = KafkaRecord(value=data)
        message = codec(Format(args.format)).decode(record, destination)
        document = jsonmode.document(message)
    except (OSError, ValueError) as error:
        return _fail("decode", args.file, error)
    if message.destination is unnamed:  # neither the record nor --destination names one: show none
        del document["headers"]["JMSDestination"]
    text = json.dumps(document, indent=2, ensure_ascii=False)
    # backslashreplace turns a lone surrogate into its JSON escape, so the output stays valid JSON.
    sys.stdout.buffer.write(text.encode(errors="backslashreplace") + b"\n")
    return 0


def run_encode(args: argparse.Namespace) -> int:
    from bridge_job.config import Format
    from bridge_job.formats import KafkaRecord, jsonmode, records
    from bridge_job.formats.codecs import codec

    try:
        unnamed = _unnamed()
        destination = _destination(args.destination) or unnamed
        message = jsonmode.decode(KafkaRecord(value=_read(args.file)), destination)
        if message.destination is unnamed and args.format != "basic":  # basic alone does not write it
            raise ValueError("headers.JMSDestination: missing; add it or pass --destination")
        record = codec(Format(args.format)).encode(message, args.origin)
        if args.record or args.format == "native":
            output = _record_text(records.record_document(record)).encode() + b"\n"
        else:
            output = record.value or b""
        if args.output is None:
            sys.stdout.buffer.write(output)
        else:
            Path(args.output).write_bytes(output)
    except (OSError, ValueError) as error:
        return _fail("encode", args.file, error)
    return 0


def _unnamed() -> Destination:
    """A stand-in for a destination nobody named, told apart by identity."""
    from bridge_job.message import Destination, DestinationKind

    return Destination(DestinationKind.QUEUE, "unnamed")


def _destination(uri: str | None) -> Destination | None:
    from bridge_job.message import Destination

    return None if uri is None else Destination.parse(uri)


def _read(file: str) -> bytes:
    return sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()


def _record_text(document: dict[str, Any]) -> str:
    """The record document with one header pair per line, which reads better than json's indent."""

    def dump(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    pairs = ",\n".join(f"    {dump(pair)}" for pair in document["headers"])
    headers = f"[\n{pairs}\n  ]" if pairs else "[]"
    key, value = dump(document["key"]), dump(document["value"])
    return f'{{\n  "key": {key},\n  "headers": {headers},\n  "value": {value}\n}}'


def _fail(command: str, file: str, error: Exception) -> int:
    if isinstance(error, OSError) and error.strerror:
        where, reason = error.filename or file, error.strerror
    else:
        where, reason = file, " ".join(str(error).split())  # one line, whatever the exception says
    print(f"jmsbridge {command}: {'stdin' if where == '-' else where}: {reason}", file=sys.stderr)
    return USAGE_ERROR
