"""Certificates for the local servers (the API server, Kafka's TLS listener, the JMS brokers' TLS
transports) and their clients, made with openssl (and keytool, for Java's stores) for each run, so that
nothing secret is kept anywhere."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

LOOPBACK_NAMES = ("IP:127.0.0.1", "DNS:localhost")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _new_key(path: str, cwd: Path) -> None:
    """A P-256 key (PKCS#8 PEM): made in a millisecond where an RSA 2048 key took 0.1 to 0.5 CPU-s, and
    read by every party here (Java, librdkafka, Go, Python's ssl)."""
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path, cwd=cwd)


def make_ca(directory: Path, name: str = "ca", subject: str = "jmsbridge-test-ca") -> Path:
    """`<name>.key` and the self-signed `<name>.crt` in `directory`; returns the certificate's path."""
    directory.mkdir(parents=True, exist_ok=True)
    _new_key(f"{name}.key", cwd=directory)
    _openssl("req", "-x509", "-new", "-key", f"{name}.key", "-subj", f"/CN={subject}", "-days", "2",
             "-out", f"{name}.crt", cwd=directory)  # fmt: skip
    return directory / f"{name}.crt"


def issue(
    directory: Path, name: str, common_name: str, alt_names: tuple[str, ...] = LOOPBACK_NAMES, ca: str = "ca"
) -> tuple[Path, Path]:
    """`<name>.key` and `<name>.crt` signed by the CA `make_ca` left in `directory` (`<ca>.key`, `<ca>.crt`),
    for `common_name` and `alt_names` (none for a client certificate); returns (certificate, key)."""
    _new_key(f"{name}.key", cwd=directory)
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
    _new_key(f"{name}.key", cwd=directory)
    _openssl("pkey", "-in", f"{name}.key", "-pubout", "-out", f"{name}.pub", cwd=directory)


def key_store(directory: Path, name: str, password: str) -> Path:
    """`<name>.p12`: the key and certificate `issue` left in `directory`, as a PKCS12 store a JVM reads
    (its key under the same password, as Java's key managers expect)."""
    _openssl("pkcs12", "-export", "-in", f"{name}.crt", "-inkey", f"{name}.key", "-name", name,
             "-out", f"{name}.p12", "-passout", f"pass:{password}", cwd=directory)  # fmt: skip
    return directory / f"{name}.p12"


def trust_store(directory: Path, name: str, password: str, ca: str = "ca") -> Path:
    """`<name>-trust.p12`: the CA certificate `make_ca` left in `directory` as a trusted entry of a PKCS12
    store, made with Java's keytool (OpenSSL 3.0 cannot mark an entry trusted the way Java reads it)."""
    subprocess.run(
        ["keytool", "-importcert", "-noprompt", "-alias", ca, "-file", f"{ca}.crt", "-storetype", "PKCS12",
         "-keystore", f"{name}-trust.p12", "-storepass", password],
        cwd=directory, check=True, capture_output=True,
    )  # fmt: skip
    return directory / f"{name}-trust.p12"


@dataclass(frozen=True)
class JavaTls:
    """A Java TLS endpoint's stores: its certificate and key, the CAs it trusts, one password for both."""

    key_store: Path
    trust_store: Path
    password: str = field(repr=False)

    @classmethod
    def make(cls, directory: Path, name: str, ca: str = "ca", alt_names: tuple[str, ...] = ()) -> JavaTls:
        """A certificate for `name` signed by the CA `ca` in `directory` (made when missing), and a
        store trusting that CA."""
        if not (directory / f"{ca}.crt").exists():
            make_ca(directory, ca, f"jmsbridge-test-{ca}")
        issue(directory, name, name, alt_names, ca)
        password = f"{name}-store-secret"
        return cls(key_store(directory, name, password), trust_store(directory, name, password, ca), password)
