"""Who is acting: tenant, actor id and roles, resolved from the identity headers.

Each identity header may be sent once: a second copy (even an identical one) means some hop
appended where it should have replaced, so which copy is the gateway's cannot be known. Role
names must match :data:`plugin_api.identity.ROLE_NAME_PATTERN`; anything else is refused,
never normalised into another role.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from plugin_api.errors import BadRequest, PolicyDenied
from plugin_api.identity import ANONYMOUS_ACTOR, ROLE_NAME_PATTERN, is_role_name

ANONYMOUS = ANONYMOUS_ACTOR

_OWS = " \t"
"""HTTP's optional whitespace: the only characters trimmed around a role (spec 2.1)."""


@dataclass(frozen=True, slots=True)
class Actor:
    """The resolved identity of a request (trusted as sent; see spec part 5)."""

    tenant_id: str
    actor_id: str
    roles: frozenset[str]
    via: tuple[tuple[str, str], ...] = ()
    """For a nested action (``ctx.data.run``): the (action, plugin) pairs that ran it,
    outermost first; its audit record names them (docs/security.md)."""


def _single(name: str, values: Sequence[str]) -> str | None:
    if len(values) > 1:
        raise BadRequest(f"Header {name} was sent more than once")
    return values[0] if values else None


def resolve_tenant(tenant_values: Sequence[str]) -> str:
    """The active tenant: ``X-Tenant-ID`` must be present once and not blank."""
    tenant = _single("X-Tenant-ID", tenant_values)
    if tenant is None or not tenant.strip():
        raise BadRequest("Missing required header X-Tenant-ID")
    return tenant


def parse_roles(header: str | None) -> frozenset[str]:
    """The roles of one ``X-Actor-Roles`` value: comma-separated, spaces and tabs around each
    trimmed, empty entries dropped; any other entry that is not a role name is a 400."""
    roles: set[str] = set()
    for entry in (header or "").split(","):
        role = entry.strip(_OWS)
        if not role:
            continue
        if not is_role_name(role):
            raise BadRequest(
                f"Header X-Actor-Roles holds {role[:80]!r}, which is not a role name "
                f"({ROLE_NAME_PATTERN})"
            )
        roles.add(role)
    return frozenset(roles)


def resolve_actor(
    tenant_values: Sequence[str],
    actor_values: Sequence[str],
    role_values: Sequence[str],
    *,
    require_actor_id: bool = False,
) -> Actor:
    """Resolve the actor from every value sent for each identity header.

    The actor id defaults to ``anon`` (an empty ``X-Actor-Id`` counts as absent). With
    ``require_actor_id`` an anonymous actor is refused with 403 ``PolicyDenied``.
    """
    tenant = resolve_tenant(tenant_values)
    actor = _single("X-Actor-Id", actor_values) or ANONYMOUS
    roles = parse_roles(_single("X-Actor-Roles", role_values))
    if require_actor_id and actor == ANONYMOUS:
        raise PolicyDenied(f"Actions need an X-Actor-Id header naming an actor (not {ANONYMOUS!r})")
    return Actor(tenant_id=tenant, actor_id=actor, roles=roles)
