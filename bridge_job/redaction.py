"""Credentials out of everything the bridge prints or stores: URLs, property values, error messages.

Credentials reach the bridge only through Secrets (`credentialsSecretRef`, `kafka.sasl`); validation
refuses them anywhere else (`bridge_job.config.validation`). What a broker, a client library or a user's typo
still puts into a message is masked here, in one place: the job's log lines (its `jmsbridge stopped:` line
included, through `redact_logs`), the log lines of Spark's Python processes (`redact_process_logs`, set
up by every flow's reader: spark/readers.py), the text of every `BridgeStopped` (which Spark's JVM logs
with a failed task) and the operator's conditions go through `redact`.

A key is secret-looking when its last word (split at dots, dashes, underscores and camelCase) is one of
`SECRET_WORDS` (`password`, `trustStorePassword`, `sasl.oauthbearer.client.secret`, ...), or when the
whole key is one of `SECRET_KEYS` (settings whose value embeds credentials, like `sasl.jaas.config`).
"""

from __future__ import annotations

import logging
import re
import sys

MASK = "***"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

SECRET_WORDS = frozenset(
    {"password", "passwd", "pwd", "passphrase", "secret", "token", "credential", "credentials"}
)
SECRET_KEYS = frozenset({"sasl.jaas.config", "sasl.oauthbearer.config", "ssl.key.pem", "ssl.keystore.key"})

_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
# `scheme://user:password@host`: the password (up to the `@` that ends the user info).
_USER_INFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:)(?P<value>[^@/\s]+)(?=@)")
# `key=value` (URL query options, librdkafka and Java settings, JAAS options), the value maybe quoted.
_ASSIGNMENT = re.compile(r"(?P<key>[A-Za-z0-9_.$-]+)(?P<sep>\s*=\s*)(?P<value>\"[^\"]*\"|'[^']*'|[^\s&,;)]+)")
# `'key': 'value'` and `"key": "value"` (a mapping printed by Python or written as JSON).
_QUOTED_PAIR = re.compile(r"(?P<key>[\"'][A-Za-z0-9_.$-]+[\"'])(?P<sep>\s*:\s*)(?P<value>\"[^\"]*\"|'[^']*')")


def is_secret_key(key: str) -> bool:
    """Whether a setting's name says its value is a credential."""
    if key.strip().lower() in SECRET_KEYS:
        return True
    words = _WORD.findall(key)
    return bool(words) and words[-1].lower() in SECRET_WORDS


def _re2_words(words: frozenset[str]) -> str:
    return "|".join(sorted(words, key=lambda w: (-len(w), w)))


def _re2_literal(text: str) -> str:
    return "".join(f"[{c}]" if c in ".$" else c for c in text)


# The same rules for CEL's `matches` (RE2) in the CRDs, written without backslashes (a CEL string literal
# would read them as escapes). A key: one of SECRET_KEYS, or its last word one of SECRET_WORDS after a
# separator, at the start, or capitalised after a lower-case letter or digit (camelCase).
_CAMEL_WORDS = frozenset(w.capitalize() for w in SECRET_WORDS) | frozenset(w.upper() for w in SECRET_WORDS)
SECRET_KEY_RE2 = (
    f"^[ ]*(?i:{'|'.join(_re2_literal(k) for k in sorted(SECRET_KEYS))})[ ]*$"
    f"|^(.*[._-])?(?i:{_re2_words(SECRET_WORDS)})$"
    f"|^.*[a-z0-9]({_re2_words(_CAMEL_WORDS)})$"
)
# A URL's user info with a password (`scheme://user:password@host`), as `_USER_INFO` finds it.
USER_INFO_RE2 = "[A-Za-z][A-Za-z0-9+.-]*://[^:/@ ]*:[^@/ ]+@"


def _masked(match: re.Match[str]) -> str:
    value = match["value"]
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{match['key']}{match['sep']}{quote}{MASK}{quote}"


def _mask_secret_pair(match: re.Match[str]) -> str:
    return _masked(match) if is_secret_key(match["key"].strip("'\"")) else match[0]


def redact(text: str) -> str:
    """The text with every password in a URL and every secret-looking `key=value` masked."""
    text = _USER_INFO.sub(lambda m: f"{m['head']}{MASK}", text)
    text = _ASSIGNMENT.sub(_mask_secret_pair, text)
    return _QUOTED_PAIR.sub(_mask_secret_pair, text)


def url_secrets(url: str) -> list[str]:
    """What in a URL is a credential: `user info` and the names of secret-looking query options."""
    found = ["user:password@"] if _USER_INFO.search(url) else []
    found += [m["key"] for m in _ASSIGNMENT.finditer(url) if is_secret_key(m["key"])]
    return found


class Redacting(logging.Formatter):
    """A log formatter that masks credentials in whatever another formatter wrote (tracebacks too)."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        return redact(self.inner.format(record))


def redact_logs(logger: logging.Logger | None = None) -> None:
    """Every handler of `logger` (default: the root logger) writes redacted lines from now on."""
    for handler in (logger or logging.getLogger()).handlers:
        if not isinstance(handler.formatter, Redacting):
            handler.setFormatter(Redacting(handler.formatter))


def redact_process_logs() -> None:
    """Redacted, formatted log lines in a process that nothing has set logging up in, as Spark's Python
    workers, which run the tasks: without this, their warnings reach stderr through logging's last
    resort, unredacted and without a level or logger name."""
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    redact_logs(root)
