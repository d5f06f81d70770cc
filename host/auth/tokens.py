"""Verify one bearer token (a JWS-signed JWT) with PyJWT: the algorithm from the settings'
allow-list and of the key's type, the signature, ``exp``, ``nbf`` (with a leeway), ``iss`` and
``aud``. A failure raises :class:`TokenRefused` naming the reason (for the metrics and the
log); the client is told only RFC 6750's ``invalid_token``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import jwt

from host.auth.keys import KeySource

__all__ = ["TokenRefused", "TokenVerifier", "claim_at"]

_REASONS: Final[tuple[tuple[type[jwt.PyJWTError], str], ...]] = (
    (jwt.ExpiredSignatureError, "expired"),
    (jwt.ImmatureSignatureError, "not_yet_valid"),
    (jwt.InvalidIssuerError, "issuer"),
    (jwt.InvalidAudienceError, "audience"),
    (jwt.MissingRequiredClaimError, "claims"),
    (jwt.InvalidSignatureError, "signature"),
    (jwt.InvalidKeyError, "algorithm"),
    (jwt.InvalidAlgorithmError, "algorithm"),
)
_MISSING: Final = object()


class TokenRefused(Exception):
    """The token cannot be trusted; ``reason`` is one word for metrics and logs."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def claim_at(claims: Mapping[str, Any], pointer: str) -> Any:
    """The claim a JSON pointer (RFC 6901) names, or ``None`` when absent."""
    value: Any = claims
    for raw in pointer.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, Mapping):
            value = value.get(token, _MISSING)
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            value = _MISSING
        if value is _MISSING:
            return None
    return value


class TokenVerifier:
    """Checks tokens against one issuer's keys."""

    def __init__(
        self,
        keys: KeySource,
        *,
        algorithms: tuple[str, ...],
        issuer: str,
        audience: str,
        leeway_s: float,
    ) -> None:
        self.keys = keys
        self._algorithms = frozenset(algorithms) - {"none"}
        self._issuer = issuer
        self._audience = audience
        self._leeway = leeway_s

    async def verify(self, token: str) -> dict[str, Any]:
        """The token's claims, once everything checks out.

        :raises TokenRefused: anything does not.
        :raises KeysUnavailable: no key is known and the issuer cannot be reached.
        """
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRefused("malformed") from None
        algorithm = header.get("alg")
        # The allow-list decides, never the token: 'none' and unlisted algorithms stop here.
        if not isinstance(algorithm, str) or algorithm not in self._algorithms:
            raise TokenRefused("algorithm")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise TokenRefused("malformed")
        key = await self.keys.key(kid)
        if key is None:
            raise TokenRefused("unknown_key")
        if not key.allows(algorithm):  # e.g. HS256 "signed" with an RSA public key
            raise TokenRefused("algorithm")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[algorithm],
                audience=self._audience,
                issuer=self._issuer,
                leeway=self._leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            raise TokenRefused(_reason(exc)) from None
        return claims


def _reason(error: jwt.PyJWTError) -> str:
    for kind, reason in _REASONS:
        if isinstance(error, kind):
            return reason
    return "malformed"
