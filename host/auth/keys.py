"""Verification keys for token mode: a static key (a PEM public key or a JWKS file) or an
issuer's JWKS fetched over HTTP.

The JWKS cache never fetches in the request's path more than it must: one fetch at a time
(single flight: concurrent requests wait for the same one), a fetch for an unknown key id at
most once per ``refresh_s``, a background refresh once the keys are ``max_age_s`` old, and the
keys already known kept in use while the issuer cannot be reached.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key

__all__ = ["JwksKeys", "KeySource", "KeysUnavailable", "StaticKeys", "VerifyKey", "key_type_of"]

logger = logging.getLogger("tessera.auth")

_KEY_TYPES: Mapping[str, str] = {"HS": "oct", "RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


def key_type_of(algorithm: str) -> str:
    """The JWK key type (``kty``) an algorithm needs: ``RS256`` -> ``RSA``, ``HS256`` ->
    ``oct``, ``EdDSA`` -> ``OKP``."""
    return _KEY_TYPES[algorithm[:2]]


@dataclass(frozen=True, slots=True)
class VerifyKey:
    """One key a token may be signed with."""

    kid: str | None
    kty: str
    """``RSA``, ``EC``, ``OKP`` or ``oct``: only the algorithms of that type may use it."""
    algorithm: str | None
    """The JWK's own ``alg``, when it names one: then only that algorithm may use it."""
    key: Any
    """What :func:`jwt.decode` takes (a ``cryptography`` public key, or bytes)."""

    def allows(self, algorithm: str) -> bool:
        """Whether a token signed with ``algorithm`` may be verified with this key."""
        if self.algorithm is not None and self.algorithm != algorithm:
            return False
        return key_type_of(algorithm) == self.kty


class KeysUnavailable(Exception):
    """No key is known and the issuer's JWKS cannot be fetched."""


class KeySource(Protocol):
    """Where the verification keys come from."""

    async def key(self, kid: str | None) -> VerifyKey | None:
        """The key named ``kid`` (or the only key, for a token without ``kid``), if known.

        :raises KeysUnavailable: no key is known and none can be fetched.
        """

    async def aclose(self) -> None:
        """Stop any fetch in flight."""


def parse_jwks(document: Any) -> dict[str | None, VerifyKey]:
    """The usable keys of a JWKS document, by ``kid``; keys of unknown types, and keys whose
    ``use`` is not ``sig``, are skipped."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError("not a JWKS document (an object with a 'keys' array)")
    keys: dict[str | None, VerifyKey] = {}
    for entry in document["keys"]:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        try:
            jwk = jwt.PyJWK(entry)
        except jwt.PyJWTError as exc:
            logger.warning("JWKS key %r skipped: %s", entry.get("kid"), exc)
            continue
        kid = entry.get("kid")
        algorithm = entry.get("alg")
        keys[kid if isinstance(kid, str) else None] = VerifyKey(
            kid=kid if isinstance(kid, str) else None,
            kty=str(entry.get("kty")),
            algorithm=algorithm if isinstance(algorithm, str) else None,
            key=jwk.key,
        )
    return keys


def _pem_key(text: bytes) -> VerifyKey:
    public = load_pem_public_key(text)
    if isinstance(public, rsa.RSAPublicKey):
        kty = "RSA"
    elif isinstance(public, ec.EllipticCurvePublicKey):
        kty = "EC"
    elif isinstance(public, (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)):
        kty = "OKP"
    else:
        raise ValueError(f"unsupported public key type {type(public).__name__}")
    return VerifyKey(kid=None, kty=kty, algorithm=None, key=public)


def _pick(keys: Mapping[str | None, VerifyKey], kid: str | None) -> VerifyKey | None:
    if kid is not None:
        return keys.get(kid)
    if len(keys) == 1:  # a token without kid, and one key to try
        return next(iter(keys.values()))
    return None


class StaticKeys:
    """Keys read once from a file: a PEM public key or a JWKS document."""

    def __init__(self, path: str) -> None:
        raw = Path(path).read_bytes()
        if raw.lstrip().startswith(b"-----BEGIN"):
            key = _pem_key(raw)
            self._keys: dict[str | None, VerifyKey] = {None: key}
        else:
            self._keys = parse_jwks(json.loads(raw))
        if not self._keys:
            raise ValueError(f"{path}: no usable key")

    async def key(self, kid: str | None) -> VerifyKey | None:
        if kid is not None and None in self._keys and len(self._keys) == 1:
            return self._keys[None]  # a PEM key has no id: it verifies whatever kid names
        return _pick(self._keys, kid)

    async def aclose(self) -> None:
        return None


class JwksKeys:
    """An issuer's JWKS, fetched with ``httpx`` on the event loop (never a blocking call)."""

    def __init__(self, url: str, *, refresh_s: float, max_age_s: float, timeout_s: float) -> None:
        self.url = url
        self._refresh_s = refresh_s
        self._max_age_s = max_age_s
        self._timeout_s = timeout_s
        self._keys: dict[str | None, VerifyKey] = {}
        self._fetched_at: float | None = None
        """When the keys in hand were fetched (monotonic), if ever."""
        self._tried_at: float | None = None
        """When the last fetch started, successful or not."""
        self._flight: asyncio.Task[None] | None = None
        self.fetches = 0
        """Fetches started so far (for tests and logs)."""

    async def key(self, kid: str | None) -> VerifyKey | None:
        now = time.monotonic()
        if self._fetched_at is None:
            if self._may_try(now):  # an issuer that never answered is asked once per interval
                await self._refresh(wait=True)
            elif self._flight is not None and not self._flight.done():
                await asyncio.shield(self._flight)
            if self._fetched_at is None:
                raise KeysUnavailable(f"the JWKS at {self.url} cannot be fetched")
        elif now - self._fetched_at >= self._max_age_s and self._may_try(now):
            await self._refresh(wait=False)  # served from the keys in hand meanwhile
        found = _pick(self._keys, kid)
        if found is None and kid is not None and self._may_try(time.monotonic()):
            await self._refresh(wait=True)  # a new key at the issuer (rotation)
            found = _pick(self._keys, kid)
        return found

    def _may_try(self, now: float) -> bool:
        return self._tried_at is None or now - self._tried_at >= self._refresh_s

    async def _refresh(self, *, wait: bool) -> None:
        if self._flight is None or self._flight.done():
            self._tried_at = time.monotonic()
            self._flight = asyncio.ensure_future(self._fetch())
        if wait:
            await asyncio.shield(self._flight)

    async def _fetch(self) -> None:
        self.fetches += 1
        try:
            async with httpx.AsyncClient(timeout=self._timeout_s) as client:
                response = await client.get(self.url, headers={"Accept": "application/json"})
                response.raise_for_status()
                keys = parse_jwks(response.json())
        except Exception as exc:  # a background task: nothing else would see it
            state = "keeping the keys in hand" if self._keys else "no key known"
            logger.warning("JWKS fetch from %s failed (%s): %s", self.url, state, exc)
            return
        self._keys = keys
        self._fetched_at = time.monotonic()

    async def aclose(self) -> None:
        flight, self._flight = self._flight, None
        if flight is not None and not flight.done():
            flight.cancel()
            await asyncio.gather(flight, return_exceptions=True)
