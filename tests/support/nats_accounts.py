"""Decentralized NATS authentication made here, for a real nats-server in operator mode: an operator, an
account and users, each an NKEY, bound by JWTs the way `nsc` binds them, and the `.creds` file a user
connects with. (No `nsc` on this machine; nkeys, which nats-py's `nkeys` extra brings, signs.)

A JWT is `base64url(header).base64url(claims).base64url(ed25519 signature of the first two)`, the issuer
signing: the operator signs itself and the account, the account signs its users.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nkeys

UNLIMITED = -1
_HEADER = {"typ": "JWT", "alg": "ed25519-nkey"}


@dataclass(frozen=True)
class Identity:
    """One NKEY: its seed (secret) and public key."""

    seed: bytes

    @classmethod
    def new(cls, prefix: int) -> Identity:
        return cls(nkeys.encode_seed(os.urandom(32), prefix))

    @property
    def public_key(self) -> str:
        return str(nkeys.from_seed(bytearray(self.seed)).public_key.decode())

    def sign(self, subject: Identity | str, name: str, nats: dict[str, Any]) -> str:
        """A JWT, issued by this identity, for `subject` (itself, for the operator)."""
        claims: dict[str, Any] = {
            "iat": int(time.time()),
            "iss": self.public_key,
            "name": name,
            "sub": subject if isinstance(subject, str) else subject.public_key,
            "nats": {**nats, "version": 2},
        }
        # The claims' id, as the jwt library makes it: a hash of the claims without it.
        digest = hashlib.sha512(json.dumps(claims, sort_keys=True).encode()).digest()[:32]
        claims["jti"] = base64.b32encode(digest).decode().rstrip("=")
        signed = f"{_b64(json.dumps(_HEADER).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = nkeys.from_seed(bytearray(self.seed)).sign(signed.encode())
        return f"{signed}.{_b64(signature)}"


@dataclass(frozen=True)
class Account:
    """An operator and one account in it, as a nats-server configuration (`resolver: MEMORY`)."""

    operator: Identity
    account: Identity

    @classmethod
    def new(cls) -> Account:
        return cls(Identity.new(nkeys.PREFIX_BYTE_OPERATOR), Identity.new(nkeys.PREFIX_BYTE_ACCOUNT))

    def server_config(self, path: Path) -> Path:
        """A nats-server configuration file trusting this operator and preloading the account."""
        operator_jwt = self.operator.sign(self.operator, "test-operator", {"type": "operator"})
        limits = {
            key: UNLIMITED
            for key in ("subs", "data", "payload", "imports", "exports", "conn", "leaf", "mem_storage")
        }
        account_jwt = self.operator.sign(
            self.account, "test-account", {"type": "account", "limits": {**limits, "wildcards": True}}
        )
        path.write_text(
            f'operator: "{operator_jwt}"\n'
            "resolver: MEMORY\n"
            f'resolver_preload: {{ {self.account.public_key}: "{account_jwt}" }}\n'
        )
        return path

    def creds(self, name: str) -> str:
        """A new user's `.creds` file text, its JWT signed by the account."""
        user = Identity.new(nkeys.PREFIX_BYTE_USER)
        limits = {"subs": UNLIMITED, "data": UNLIMITED, "payload": UNLIMITED}
        user_jwt = self.account.sign(user, name, {"type": "user", "pub": {}, "sub": {}, **limits})
        return (
            f"-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n"
            "************************* IMPORTANT *************************\n"
            "NKEY Seed printed below can be used to sign and prove identity.\n\n"
            f"-----BEGIN USER NKEY SEED-----\n{user.seed.decode()}\n------END USER NKEY SEED------\n"
        )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")
