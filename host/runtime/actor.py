"""Who is acting: tenant, actor id and roles, resolved from the identity headers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from plugin_api.errors import BadRequest

ANONYMOUS = "anon"


@dataclass(frozen=True, slots=True)
class Actor:
    """The resolved identity of a request (trusted as sent; see spec part 5)."""

    tenant_id: str
    actor_id: str
    roles: frozenset[str]


def _single(name: str, values: Sequence[str]) -> str | None:
    distinct = {value for value in values}
    if len(distinct) > 1:
        raise BadRequest(f"Header {name} was sent more than once with different values")
    return values[0] if values else None


def resolve_tenant(tenant_values: Sequence[str]) -> str:
    """The active tenant: ``X-Tenant-ID`` must be present and not blank."""
    tenant = _single("X-Tenant-ID", tenant_values)
    if tenant is None or not tenant.strip():
        raise BadRequest("Missing required header X-Tenant-ID")
    return tenant


def resolve_actor(
    tenant_values: Sequence[str], actor_values: Sequence[str], role_values: Sequence[str]
) -> Actor:
    """Resolve the actor from every value sent for each identity header.

    The actor id defaults to ``anon``; roles are comma-separated, trimmed, empty entries
    dropped, and several ``X-Actor-Roles`` headers are joined as one list.
    """
    tenant = resolve_tenant(tenant_values)
    actor = _single("X-Actor-Id", actor_values)
    roles = frozenset(
        role.strip() for header in role_values for role in header.split(",") if role.strip()
    )
    return Actor(tenant_id=tenant, actor_id=actor or ANONYMOUS, roles=roles)
