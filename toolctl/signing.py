"""Ed25519 signing keys for announcements: write one, sign with it, verify a signature.

The `cryptography` library is imported inside each function: a registry that reads no
announcements never loads it. A public key travels as ``ed25519:`` + base64 of its 32 raw
bytes, which is what `toolctl keygen` prints and `toolctl trust add` takes.
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path

from toolctl.errors import UsageError

PREFIX = "ed25519:"


def generate(path: Path) -> str:
    """Write a new private key to ``path`` (PEM, mode 0600, never overwriting; missing
    directories made, mode 0700, as ssh-keygen makes ~/.ssh); its public key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # ~/.config/toolctl, new
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise UsageError(f"{path} already exists", hint="choose another file") from None
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc
    with os.fdopen(handle, "wb") as out:
        out.write(pem)
    return public_key_of(key)


def public_key_of(key: object) -> str:
    """``ed25519:BASE64`` of a private key's public half."""
    from cryptography.hazmat.primitives import serialization

    raw = key.public_key().public_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return PREFIX + base64.b64encode(raw).decode()


class SigningKey:
    """A private key read from a file, and its public key as text."""

    def __init__(self, path: Path) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        try:
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        except OSError as exc:
            raise UsageError(f"cannot read signing key {path}: {exc.strerror or exc}") from exc
        except (ValueError, TypeError) as exc:
            raise UsageError(f"{path} is not a signing key: {exc}") from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise UsageError(f"{path} is not an Ed25519 key", hint="write one with toolctl keygen")
        self._key = key
        self.public = public_key_of(key)

    def sign(self, payload: bytes) -> str:
        """The base64 signature of ``payload``."""
        return base64.b64encode(self._key.sign(payload)).decode()


def check_public_key(text: str) -> str:
    """``text`` if it is an ``ed25519:`` public key, else UsageError saying what one is."""
    if public_bytes(text) is None:
        raise UsageError(
            f"bad public key {text!r}: expected ed25519: and 44 base64 characters",
            hint="`toolctl keygen FILE` prints one",
        )
    return text


def public_bytes(text: str) -> bytes | None:
    if not text.startswith(PREFIX):
        return None
    try:
        raw = base64.b64decode(text[len(PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 32 else None


def verify(public_key: str, signature: str, payload: bytes) -> bool:
    """Whether ``signature`` (base64) is ``public_key``'s signature of ``payload``."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    raw = public_bytes(public_key)
    if raw is None:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(raw).verify(
            base64.b64decode(signature, validate=True), payload
        )
    except (InvalidSignature, binascii.Error, ValueError):
        return False
    return True
