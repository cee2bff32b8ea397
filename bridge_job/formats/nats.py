"""A format's record on NATS: its value is the payload and its headers are NATS headers (jmsToNats routes,
the answers of natsToJms requests). NATS carries a header only as single-line text, so a record whose
headers are not goes in a format that carries them in the payload (`envelope`) or not at all.
"""

from __future__ import annotations

from bridge_job.formats import FormatError, KafkaRecord


def nats_headers(record: KafkaRecord) -> dict[str, str]:
    """A record's headers as NATS headers: single-line text without surrounding blanks (what the NATS
    protocol carries unchanged); FormatError for a header that is not."""
    headers: dict[str, str] = {}
    for name, raw in record.headers:
        try:
            text = raw.decode()
        except UnicodeDecodeError:
            text = None
        if text is None or text != text.strip() or "\r" in text or "\n" in text:
            raise FormatError(
                f"header {name}: {raw[:40]!r} is no single-line NATS header text; format envelope carries "
                "it in the payload"
            )
        headers[name] = text
    return headers
