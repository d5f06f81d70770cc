"""Who is acting, in either mode: the one place a route (or the console) resolves identity.

``headers`` mode is the spec's (part 5): ``X-Tenant-ID``, ``X-Actor-Id`` and
``X-Actor-Roles`` trusted as sent (:mod:`host.runtime.actor`), a tenant or actor id within
:data:`IDENTITY_MAX_BYTES`. ``token`` mode verifies an
``Authorization: Bearer`` JWT (:mod:`host.auth.tokens`) and maps its claims, by the JSON
pointers of the settings, to the tenant, the actor id and the roles. In token mode the client
may not send ``X-Actor-Id`` or ``X-Actor-Roles`` (400), and may send ``X-Tenant-ID`` only to
choose one of the tenants the token allows (else 403 ``TenantBoundaryViolation``).

Both modes refuse with 400 ``BadRequest`` a tenant or actor id the rest of the host could not
keep: longer than :data:`IDENTITY_MAX_BYTES` bytes of UTF-8, holding a NUL character or
text that is not Unicode (docs/http.md, "Identity limits"). Whatever passes here is stored
and written on: audit records, stamped fields, a subscriber's copy, keys and list indexes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

from host.auth.keys import JwksKeys, KeySource, KeysUnavailable, StaticKeys
from host.auth.tokens import TokenRefused, TokenVerifier, claim_at
from host.config import Settings
from host.errors import StartupError
from host.logs import request_id_var
from host.runtime.actor import ANONYMOUS, Actor, resolve_actor, resolve_tenant
from plugin_api.errors import (
    BadRequest,
    PolicyDenied,
    ServiceUnavailable,
    TenantBoundaryViolation,
    Unauthenticated,
)
from plugin_api.identity import is_role_name

__all__ = [
    "IDENTITY_MAX_BYTES",
    "HeaderIdentity",
    "Headers",
    "Identity",
    "TokenIdentity",
    "identity_for",
]

logger = logging.getLogger("tessera.auth")

IDENTITY_HEADERS = ("X-Tenant-ID", "X-Actor-Id", "X-Actor-Roles")
IDENTITY_MAX_BYTES: Final = 255
"""The longest tenant or actor id, in bytes of UTF-8 (an ASCII header value: 255 characters;
a header's other bytes are read as ISO-8859-1 and count 2). What a list index leaves beside a
listed field's 2,000 bytes (host/storage/textlimits.py) holds a tenant this long, and a
field copying an actor id holds it (OpenID Connect's ``sub`` is at most 255 ASCII
characters)."""


def _kept(what: str, value: str) -> str:
    """``value`` when the host can keep it as a tenant or actor id (module docstring).

    :raises BadRequest: naming ``what`` and why.
    """
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise BadRequest(f"{what} is not Unicode text") from None
    if size > IDENTITY_MAX_BYTES:
        raise BadRequest(
            f"{what} is {size} bytes long (UTF-8); at most {IDENTITY_MAX_BYTES} are accepted"
        )
    if "\x00" in value:
        raise BadRequest(f"{what} holds a NUL character")
    return value


def _kept_actor(actor: Actor, tenant: str, actor_id: str) -> Actor:
    _kept(tenant, actor.tenant_id)
    _kept(actor_id, actor.actor_id)
    return actor


class Headers(Protocol):
    """A request's headers (Quart's and Werkzeug's ``Headers``)."""

    def getlist(self, key: str) -> list[str]: ...


class Identity(Protocol):
    """Resolves the identity of a request."""

    async def tenant(self, headers: Headers) -> str:
        """The active tenant (projection reads)."""

    async def actor(self, headers: Headers, *, require_actor_id: bool = False) -> Actor:
        """The acting identity; with ``require_actor_id`` an anonymous actor is 403."""

    async def aclose(self) -> None:
        """Stop background work (a JWKS fetch in flight)."""


class HeaderIdentity:
    """The spec's header mode: the identity headers trusted as sent."""

    async def tenant(self, headers: Headers) -> str:
        return _kept("Header X-Tenant-ID", resolve_tenant(headers.getlist("X-Tenant-ID")))

    async def actor(self, headers: Headers, *, require_actor_id: bool = False) -> Actor:
        actor = resolve_actor(
            headers.getlist("X-Tenant-ID"),
            headers.getlist("X-Actor-Id"),
            headers.getlist("X-Actor-Roles"),
            require_actor_id=require_actor_id,
        )
        return _kept_actor(actor, "Header X-Tenant-ID", "Header X-Actor-Id")

    async def aclose(self) -> None:
        return None


class TokenIdentity:
    """Token mode: the identity is the verified token's."""

    def __init__(
        self,
        verifier: TokenVerifier,
        settings: Settings,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        self.verifier = verifier
        self._settings = settings
        self._on_failure = on_failure

    async def tenant(self, headers: Headers) -> str:
        return (await self.actor(headers)).tenant_id

    async def actor(self, headers: Headers, *, require_actor_id: bool = False) -> Actor:
        claims = await self._claims(headers)
        for name in IDENTITY_HEADERS[1:]:
            if headers.getlist(name):
                self._failed("identity_headers")
                raise BadRequest(f"Header {name} is not accepted: the identity is the token's")
        actor = claim_at(claims, self._settings.auth_actor_claim)
        if not isinstance(actor, str) or not actor:
            raise self._refused("claims")
        if require_actor_id and actor == ANONYMOUS:
            raise PolicyDenied(f"Actions need an actor (not {ANONYMOUS!r})")
        roles = self._roles(claims)
        tenant = self._tenant(claims, headers.getlist("X-Tenant-ID"))
        found = Actor(tenant_id=tenant, actor_id=actor, roles=roles)
        return _kept_actor(found, "The token's tenant", "The token's actor claim")

    async def _claims(self, headers: Headers) -> dict[str, Any]:
        values = headers.getlist("Authorization")
        if len(values) > 1:
            self._failed("malformed")
            raise BadRequest("Header Authorization was sent more than once")
        scheme, _, token = (values[0] if values else "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            self._failed("missing")
            raise Unauthenticated(error=None)
        try:
            return await self.verifier.verify(token.strip())
        except TokenRefused as refused:
            raise self._refused(refused.reason) from None
        except KeysUnavailable as exc:
            self._failed("keys_unavailable")
            logger.error("token mode: %s (request id %s)", exc, request_id_var.get())
            raise ServiceUnavailable("The token issuer's keys cannot be fetched") from None

    def _roles(self, claims: Mapping[str, Any]) -> frozenset[str]:
        raw = claim_at(claims, self._settings.auth_roles_claim)
        if raw is None:
            return frozenset()
        if not isinstance(raw, list) or not all(_role(r) for r in raw):
            raise self._refused("claims")
        return frozenset(raw)

    def _tenant(self, claims: Mapping[str, Any], sent: list[str]) -> str:
        claimed = claim_at(claims, self._settings.auth_tenant_claim)
        claimed = claimed if isinstance(claimed, str) and claimed.strip() else None
        allowed: list[str] = []
        if self._settings.auth_tenants_claim:
            listed = claim_at(claims, self._settings.auth_tenants_claim)
            if isinstance(listed, list):
                allowed = [t for t in listed if isinstance(t, str) and t.strip()]
        if len(sent) > 1:
            self._failed("identity_headers")
            raise BadRequest("Header X-Tenant-ID was sent more than once")
        if sent:
            if sent[0] == claimed or sent[0] in allowed:
                return sent[0]
            self._failed("tenant")
            raise TenantBoundaryViolation("The token does not allow this tenant")
        if claimed is not None:
            return claimed
        if len(allowed) == 1:
            return allowed[0]
        if allowed:
            raise BadRequest("The token allows several tenants: choose one with X-Tenant-ID")
        raise self._refused("claims")

    def _failed(self, reason: str) -> None:
        logger.info("token refused: %s (request id %s)", reason, request_id_var.get())
        if self._on_failure is not None:
            self._on_failure(reason)

    def _refused(self, reason: str) -> Unauthenticated:
        self._failed(reason)
        return Unauthenticated("The bearer token is not valid")

    async def aclose(self) -> None:
        await self.verifier.keys.aclose()


def _role(value: object) -> bool:
    return isinstance(value, str) and is_role_name(value)


def identity_for(settings: Settings, on_failure: Callable[[str], None] | None = None) -> Identity:
    """The identity resolver ``settings`` asks for (``TESSERA_AUTH_MODE``); ``on_failure``
    is called with the reason of each refused token (metrics).

    :raises StartupError: token mode without a key source, an issuer or an audience.
    """
    if settings.auth_mode != "token":
        return HeaderIdentity()
    missing = [
        name
        for name, value in (
            ("TESSERA_AUTH_ISSUER", settings.auth_issuer),
            ("TESSERA_AUTH_AUDIENCE", settings.auth_audience),
            ("TESSERA_AUTH_ACTOR_CLAIM", settings.auth_actor_claim),
        )
        if not value
    ]
    if bool(settings.auth_jwks_url) == bool(settings.auth_key_file):
        missing.append("exactly one of TESSERA_AUTH_JWKS_URL and TESSERA_AUTH_KEY_FILE")
    if missing:
        raise StartupError("TESSERA_AUTH_MODE=token needs " + ", ".join(missing))
    keys: KeySource
    if settings.auth_jwks_url:
        keys = JwksKeys(
            settings.auth_jwks_url,
            refresh_s=settings.auth_jwks_refresh_s,
            max_age_s=settings.auth_jwks_max_age_s,
            timeout_s=settings.auth_jwks_timeout_s,
        )
    else:
        try:
            keys = StaticKeys(settings.auth_key_file)
        except (OSError, ValueError) as exc:
            raise StartupError(f"TESSERA_AUTH_KEY_FILE: {exc}") from None
    verifier = TokenVerifier(
        keys,
        algorithms=settings.auth_algorithms,
        issuer=settings.auth_issuer,
        audience=settings.auth_audience,
        leeway_s=settings.auth_leeway_s,
    )
    return TokenIdentity(verifier, settings, on_failure)
