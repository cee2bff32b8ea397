"""Certificates for the local servers (the API server, Kafka's TLS listener) and their clients, made with
openssl for each run, so that nothing secret is kept anywhere."""

from __future__ import annotations

import subprocess
from pathlib import Path

LOOPBACK_NAMES = ("IP:127.0.0.1", "DNS:localhost")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(directory: Path, name: str = "ca", subject: str = "jmsbridge-test-ca") -> Path:
    """`<name>.key` and the self-signed `<name>.crt` in `directory`; returns the certificate's path."""
    directory.mkdir(parents=True, exist_ok=True)
    _openssl("genrsa", "-out", f"{name}.key", "2048", cwd=directory)
    _openssl("req", "-x509", "-new", "-key", f"{name}.key", "-subj", f"/CN={subject}", "-days", "2",
             "-out", f"{name}.crt", cwd=directory)  # fmt: skip
    return directory / f"{name}.crt"


def issue(
    directory: Path, name: str, common_name: str, alt_names: tuple[str, ...] = LOOPBACK_NAMES, ca: str = "ca"
) -> tuple[Path, Path]:
    """`<name>.key` and `<name>.crt` signed by the CA `make_ca` left in `directory` (`<ca>.key`, `<ca>.crt`),
    for `common_name` and `alt_names` (none for a client certificate); returns (certificate, key)."""
    _openssl("genrsa", "-out", f"{name}.key", "2048", cwd=directory)
    _openssl("req", "-new", "-key", f"{name}.key", "-subj", f"/CN={common_name}", "-out", f"{name}.csr",
             cwd=directory)  # fmt: skip
    extensions: list[str] = []
    if alt_names:
        (directory / f"{name}.ext").write_text(f"subjectAltName={','.join(alt_names)}\n", encoding="utf-8")
        extensions = ["-extfile", f"{name}.ext"]
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-days", "2", *extensions, "-out", f"{name}.crt", cwd=directory)  # fmt: skip
    return directory / f"{name}.crt", directory / f"{name}.key"


def make_key_pair(directory: Path, name: str) -> None:
    """`<name>.key` and its public half `<name>.pub` (a ServiceAccount signing key)."""
    _openssl("genrsa", "-out", f"{name}.key", "2048", cwd=directory)
    _openssl("rsa", "-in", f"{name}.key", "-pubout", "-out", f"{name}.pub", cwd=directory)
