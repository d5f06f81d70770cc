"""Opaque, authenticated and encrypted page cursors (``pagination.nextCursor``).

A cursor is ``base64url(AES-SIV(payload))`` without padding (RFC 5297, from the
``cryptography`` package: a synthetic IV, so the same page gives the same cursor, and a
16-byte authentication tag). ``payload`` is the compact JSON array of the keyset values of the
last row sent (the stored values of the sort keys, then ``id``); the associated data are a
format tag and the request's *binding* (tenant, projection, filter set, sort and search, see
:func:`host.query.params.binding`). A cursor shows no value, not even of a sort key the client
was sent, and is accepted only with the key that made it and for the binding it was made for:
altered, forged, or reused with another tenant, projection, filter set, sort or search, it is
refused. The payload is padded with spaces (which JSON ignores) to a power of two of at least
:data:`PADDED_MIN` bytes (past 1 KiB, a multiple of 1 KiB), so a cursor's length tells no more
than that size class, not the length of a sort key's value (a list of an older plugin may sort
on a field it does not show, :mod:`host.graph.hidden`). Cursors made before the padding decode
as they are.

The key is shared by every worker and instance on one database (see
:mod:`host.storage.secrets`), so any of them accepts a cursor another one issued.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Sequence
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESSIV

__all__ = ["CursorCodec", "KeysetValue"]

KeysetValue = str | int | bool | None

_FORMAT: Final = b"tessera.cursor/3"
_MAX_TOKEN: Final = 12288
PADDED_MIN: Final = 128
"""The smallest padded payload, in bytes (a sort key's value and an id fit in it)."""
_PADDED_STEP: Final = 1024
"""Past this size a payload is padded to a multiple of it (not to the next power of two)."""


def _padded(payload: bytes) -> bytes:
    size = max(PADDED_MIN, 1 << (len(payload) - 1).bit_length())
    if size > _PADDED_STEP:
        size = -(-len(payload) // _PADDED_STEP) * _PADDED_STEP
    return payload.ljust(size, b" ")


class CursorCodec:
    """Encodes and checks cursors with one key."""

    __slots__ = ("_cipher",)

    def __init__(self, key: bytes) -> None:
        # AES-256-SIV takes a 512-bit key: derived from the database's secret, one purpose.
        self._cipher = AESSIV(hashlib.sha512(b"tessera cursor key\x00" + key).digest())

    def encode(self, binding: bytes, values: Sequence[KeysetValue]) -> str:
        payload = json.dumps(list(values), separators=(",", ":"), ensure_ascii=False).encode()
        sealed = self._cipher.encrypt(_padded(payload), [_FORMAT, binding])
        return base64.urlsafe_b64encode(sealed).rstrip(b"=").decode("ascii")

    def decode(self, token: str, binding: bytes, length: int) -> list[KeysetValue] | None:
        """The keyset values of ``token``, or ``None`` when it is not a cursor this key made
        for ``binding`` holding ``length`` values."""
        if len(token) > _MAX_TOKEN or not token.isascii():
            return None
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (binascii.Error, ValueError):
            return None
        if base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != token:
            return None  # not the canonical spelling of these bytes
        try:
            payload = self._cipher.decrypt(raw, [_FORMAT, binding])
        except (InvalidTag, ValueError):
            return None
        values = json.loads(payload)
        if not isinstance(values, list) or len(values) != length:
            return None
        return values
