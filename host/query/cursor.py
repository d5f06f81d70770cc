"""Opaque, authenticated and encrypted page cursors (``pagination.nextCursor``).

A cursor is ``base64url(sealed || tag)`` without padding. ``payload`` is the compact JSON
array of the keyset values of the last row sent (the stored values of the sort keys, then
``id``); ``tag`` the first 16 bytes of an HMAC-SHA256 over a format tag, the request's
*binding* (tenant, projection, filter set, sort and search, see
:func:`host.query.params.binding`) and the payload; ``sealed`` the payload XORed with a key
stream of HMAC-SHA256 blocks over the tag and a counter (a deterministic, synthetic-IV
encryption: the tag is the IV), so a cursor shows no value, not even of a sort key the
client was sent. A cursor is accepted only with the key that made it and for the binding it
was made for: altered, forged, or reused with another tenant, projection, filter set, sort
or search, it is refused.

The key is shared by every worker and instance on one database (see
:mod:`host.storage.secrets`), so any of them accepts a cursor another one issued.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import Final

__all__ = ["CursorCodec", "KeysetValue"]

KeysetValue = str | int | bool | None

_FORMAT: Final = b"tessera.cursor/2\x00"
_TAG_BYTES: Final = 16
_MAX_TOKEN: Final = 8192


class CursorCodec:
    """Encodes and checks cursors with one key."""

    __slots__ = ("_key", "_sealing")

    def __init__(self, key: bytes) -> None:
        self._key = hashlib.sha256(b"tessera cursor key\x00" + key).digest()
        self._sealing = hashlib.sha256(b"tessera cursor sealing key\x00" + key).digest()

    def _seal(self, tag: bytes, data: bytes) -> bytes:
        """``data`` XOR the key stream of ``tag`` (its own inverse)."""
        stream = bytearray()
        for block in range(-(-len(data) // hashlib.sha256().digest_size)):
            counter = block.to_bytes(4, "big")
            stream += hmac.new(self._sealing, tag + counter, hashlib.sha256).digest()
        return bytes(a ^ b for a, b in zip(data, stream, strict=False))

    def _tag(self, binding: bytes, payload: bytes) -> bytes:
        message = _FORMAT + len(binding).to_bytes(4, "big") + binding + payload
        return hmac.new(self._key, message, hashlib.sha256).digest()[:_TAG_BYTES]

    def encode(self, binding: bytes, values: Sequence[KeysetValue]) -> str:
        payload = json.dumps(list(values), separators=(",", ":"), ensure_ascii=False).encode()
        tag = self._tag(binding, payload)
        token = base64.urlsafe_b64encode(self._seal(tag, payload) + tag)
        return token.rstrip(b"=").decode("ascii")

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
        tag = raw[-_TAG_BYTES:]
        payload = self._seal(tag, raw[:-_TAG_BYTES])
        if len(raw) <= _TAG_BYTES or not hmac.compare_digest(tag, self._tag(binding, payload)):
            return None
        values = json.loads(payload)
        if not isinstance(values, list) or len(values) != length:
            return None
        return values
