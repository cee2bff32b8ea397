"""`jmsbridge decode` and `jmsbridge encode`, in-process through `main` and once as the real command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bridge_job.config import Format
from bridge_job.formats import KafkaRecord, envelope
from bridge_job.message import BodyType, JmsMessage, Property, PropertyType
from jmsbridge import codec_cli
from jmsbridge.cli import main
from tests.formats.strategies import QUEUE

MESSAGE_JSON = {
    "headers": {"JMSDestination": "queue://orders", "JMSMessageID": "ID:1", "JMSCorrelationID": "c-7"},
    "properties": {"region": "emea", "count": 3, "ratio": 0.5},
    "types": {"count": "int", "ratio": "float"},
    "text": "héllo",
}


def run(capsysbinary: pytest.CaptureFixture[bytes], *argv: str) -> tuple[int, bytes, str]:
    code = main(list(argv))
    out, err = capsysbinary.readouterr()
    return code, out, err.decode()


@pytest.fixture
def message_file(tmp_path: Path) -> Path:
    path = tmp_path / "message.json"
    path.write_text(json.dumps(MESSAGE_JSON), encoding="utf-8")
    return path


def test_formats_match_the_config_enum() -> None:
    """Every format but those that need a schema registry (avro, jsonSchema)."""
    assert tuple(f.value for f in Format if not f.registered) == codec_cli.FORMATS


@pytest.mark.parametrize("fmt", ["json", "envelope", "native"])
def test_encode_then_decode_gives_the_message_back(
    fmt: str, message_file: Path, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    encoded = tmp_path / "encoded"
    code, _, err = run(
        capsysbinary, "encode", "--format", fmt, "--record", str(message_file), "-o", str(encoded)
    )
    assert (code, err) == (0, "")
    code, out, err = run(capsysbinary, "decode", "--format", fmt, "--record", str(encoded))
    assert (code, err) == (0, "")
    shown = json.loads(out)
    assert shown["headers"]["JMSMessageID"] == "ID:1"
    assert shown["properties"] == MESSAGE_JSON["properties"]
    assert shown["types"] == MESSAGE_JSON["types"]
    assert shown["text"] == "héllo"


def test_encode_envelope_writes_the_value_bytes(
    message_file: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    code, out, _ = run(capsysbinary, "encode", "--format", "envelope", str(message_file))
    assert code == 0
    message = envelope.decode(
        KafkaRecord(value=out, headers=[("jmsbridge.messageType", b"TextMessage")]), QUEUE
    )
    assert message.correlation_id == "c-7"
    assert message.properties["count"] == Property(PropertyType.INT, 3)


def test_native_record_json(message_file: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, _ = run(capsysbinary, "encode", "--format", "native", "--origin", "b1", str(message_file))
    assert code == 0
    record = json.loads(out)
    assert record["key"] is None
    assert ["jms.count", "3"] in record["headers"]
    assert ["jmsbridge.origin", "b1"] in record["headers"]
    assert record["value"] == "héllo"


def test_decode_bytes_body_is_base64(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    path = tmp_path / "value"
    path.write_bytes(
        envelope.encode(JmsMessage(QUEUE, body_type=BodyType.BYTES, body=b"\x00\xff")).value or b""
    )
    code, out, _ = run(
        capsysbinary, "decode", "--format", "envelope", "--destination", "topic://t", str(path)
    )
    assert code == 0
    shown = json.loads(out)
    assert shown["bytes"] == "AP8="
    assert shown["headers"]["JMSDestination"] == "topic://t"


def test_decode_without_any_destination_shows_none(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    path = tmp_path / "value"
    path.write_bytes(b"plain text")
    code, out, _ = run(capsysbinary, "decode", "--format", "basic", str(path))
    assert code == 0
    shown = json.loads(out)
    assert "JMSDestination" not in shown["headers"]
    assert shown["text"] == "plain text"


@pytest.mark.parametrize(
    ("argv", "content", "error"),
    [
        (
            ["decode", "--format", "envelope"],
            b"\xab\xcd\x01\x00\x05",
            "envelope byte 5: header 0 name needs 1 bytes",
        ),
        (["decode", "--format", "json"], b"{", "value byte 1: invalid JSON"),
        (["decode", "--format", "native"], b'{"value": 1}', "value: expected a string"),
        (["decode", "--format", "native"], b"[", "record byte 1: invalid JSON"),
        (
            ["decode", "--format", "native"],
            b'{"headers": [["jmsbridge.messageType", "MapMessage"]], "value": "x"}',
            "value byte 0: invalid JSON: Expecting value",  # a MapMessage's entries are JSON
        ),
        (
            ["decode", "--format", "basic", "--destination", "orders"],
            b"x",
            "destination 'orders' is not of the form",
        ),
        (["encode", "--format", "json"], b'{"text": 1}', "text: expected a string, got a number 1"),
        (["encode", "--format", "json"], b'{"text": "x"}', "headers.JMSDestination: missing; add it or pass"),
        (["encode", "--format", "basic"], b'{"bytes": ""}', "the basic format relays TextMessage only"),
        (
            ["encode", "--format", "envelope", "--destination", "queue://q"],
            b'{"properties": {"p": ""}}',
            "empty",
        ),
    ],
)
def test_errors_are_one_line_and_status_2(
    argv: list[str], content: bytes, error: str, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    path = tmp_path / "input"
    path.write_bytes(content)
    code, out, err = run(capsysbinary, *argv, str(path))
    assert code == 2
    assert out == b""
    assert err.startswith(f"jmsbridge {argv[0]}: {path}: ")
    assert error in err
    assert err.count("\n") == 1


def test_missing_file(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, _, err = run(capsysbinary, "decode", "--format", "json", str(tmp_path / "nope"))
    assert code == 2
    assert err == f"jmsbridge decode: {tmp_path / 'nope'}: No such file or directory\n"


def test_basic_encode_needs_no_destination(
    capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path
) -> None:
    path = tmp_path / "m.json"
    path.write_text('{"text": "hi"}')
    assert run(capsysbinary, "encode", "--format", "basic", str(path)) == (0, b"hi", "")


def test_the_real_command_reads_stdin() -> None:
    script = str(Path(sys.executable).parent / "jmsbridge")  # the console script the package installs
    encoded = subprocess.run(
        [sys.executable, "-m", "jmsbridge", "encode", "--format", "envelope", "-"],
        input=json.dumps(MESSAGE_JSON).encode(),
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    assert encoded.startswith(b"\xab\xcd\x01\x00")
    decoded = subprocess.run(
        [script, "decode", "--format", "envelope", "--destination", "queue://orders", "-"],
        input=encoded,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    assert json.loads(decoded)["properties"]["region"] == "emea"
    failed = subprocess.run(
        [script, "decode", "--format", "json", "-"], input=b"nope", capture_output=True, timeout=60
    )
    assert failed.returncode == 2
    assert failed.stderr == b"jmsbridge decode: stdin: value byte 0: invalid JSON: Expecting value\n"


def test_registering_the_commands_imports_nothing_heavy() -> None:
    code = (
        "import sys, jmsbridge.codec_cli; print([m for m in ('pydantic', 'bridge_job') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, timeout=60).stdout
    assert out == b"[]\n"
