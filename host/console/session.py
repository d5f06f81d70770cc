"""The console's cookie: a session id (what CSRF tokens are bound to) and, on a loopback
bind only, the identity chosen with "act as". Signed with itsdangerous (Quart's own signer)."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace

from itsdangerous import BadSignature, URLSafeSerializer
from werkzeug.datastructures import Headers

from host.runtime import Actor
from plugin_api.errors import TesseraError

__all__ = ["COOKIE", "IDENTITY_HEADERS", "Session", "Signer", "who"]

COOKIE = "tessera_console"
IDENTITY_HEADERS = ("X-Tenant-ID", "X-Actor-Id", "X-Actor-Roles", "Authorization")
"""The headers the console forwards to the API in process (``Authorization`` in token mode)."""


@dataclass(frozen=True, slots=True)
class Session:
    """What the cookie holds: a random id, and the "act as" identity when one was chosen."""

    sid: str
    tenant: str = ""
    actor: str = ""
    roles: str = ""

    @property
    def acting(self) -> bool:
        return bool(self.tenant)

    def acting_as(self, tenant: str, actor: str, roles: str) -> Session:
        return replace(self, tenant=tenant, actor=actor, roles=roles)


class Signer:
    """Signs the cookie and the CSRF tokens with one key (two salts)."""

    def __init__(self, secret: str) -> None:
        key = secret or secrets.token_hex(32)
        self._cookie = URLSafeSerializer(key, salt="tessera.console.session")
        self._csrf = URLSafeSerializer(key, salt="tessera.console.csrf")

    def read(self, raw: str | None) -> Session | None:
        """The session of a cookie value; ``None`` when absent or not signed by us."""
        if not raw:
            return None
        try:
            data = self._cookie.loads(raw)
        except BadSignature:
            return None
        if (
            not isinstance(data, list)
            or len(data) != 4
            or not all(isinstance(v, str) for v in data)
        ):
            return None
        return Session(*data)

    def dump(self, session: Session) -> str:
        return str(self._cookie.dumps([session.sid, session.tenant, session.actor, session.roles]))

    def csrf_token(self, session: Session) -> str:
        """The token every console form carries: the session id, signed."""
        return str(self._csrf.dumps(session.sid))

    def csrf_valid(self, session: Session | None, token: str | None) -> bool:
        if session is None or not token:
            return False
        try:
            return bool(self._csrf.loads(token) == session.sid)
        except BadSignature:
            return False


def new_session() -> Session:
    return Session(sid=secrets.token_urlsafe(16))


def identity_headers(session: Session | None, sent: Headers, act_as: bool) -> Headers:
    """The identity headers the console's in-process API calls carry: those of the "act as"
    cookie on a loopback bind, else exactly those the request brought (a gateway's)."""
    headers = Headers()
    if act_as and session is not None and session.acting:
        headers["X-Tenant-ID"] = session.tenant
        if session.actor:
            headers["X-Actor-Id"] = session.actor
        if session.roles:
            headers["X-Actor-Roles"] = session.roles
        return headers
    for name in IDENTITY_HEADERS:
        for value in sent.getlist(name):
            headers.add(name, value)
    return headers


async def who(
    headers: Headers, actor_of: Callable[[Headers], Awaitable[Actor]]
) -> tuple[Actor | None, str | None]:
    """The actor the API resolves from ``headers`` (``actor_of``: the API's own identity
    resolution, header or token mode), or why none."""
    try:
        actor = await actor_of(headers)
    except TesseraError as error:
        return None, error.message
    return actor, None


def as_mapping(actor: Actor) -> Mapping[str, str]:
    return {
        "tenant": actor.tenant_id,
        "actor": actor.actor_id,
        "roles": ", ".join(sorted(actor.roles)),
    }
