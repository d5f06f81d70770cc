"""The operator's audit routes (docs/history.md): verify the tenant's hash chain and export its
audit records. Both need one of ``TESSERA_AUDIT_ROLES`` (default ``auditor``) and every call
is logged on ``tessera.audit`` (who, which tenant, what).

* ``GET /_audit/verify``: the tenant's chain against its seals and the signed checkpoints.
* ``GET /_audit/export?format=ndjson|csv[&since=...][&until=...][&after=POSITION]``: the
  tenant's records, streamed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from quart import Quart, Response, request

from host import jsonio
from host.auth import Identity
from host.config import Settings
from host.fieldtypes import format_datetime, parse_datetime
from host.http.envelope import JSON
from host.http.history import audit_log
from host.runtime.actor import Actor
from host.service import Service
from host.storage.auditchain import CheckpointError, checkpoint_key, read_checkpoints, verify
from host.storage.auditexport import FORMATS, export_lines
from host.storage.auditlog import Position
from plugin_api.errors import BadRequest, InternalError, PolicyDenied

__all__ = ["register_audit"]

logger = logging.getLogger("tessera.audit")

_MEDIA = {"ndjson": "application/x-ndjson", "csv": "text/csv; charset=utf-8"}


async def _operator(settings: Settings, identity: Identity, what: str) -> Actor:
    actor = await identity.actor(request.headers)
    if actor.roles.isdisjoint(settings.audit_roles):
        raise PolicyDenied(f"The audit {what} requires one of the roles: "
                           + ", ".join(settings.audit_roles))  # fmt: skip
    logger.info(
        "audit %s by %s in tenant %s: %s",
        what,
        actor.actor_id,
        actor.tenant_id,
        request.query_string.decode("ascii", "replace") or "-",
        extra={"event": f"audit_{what}", "tenant": actor.tenant_id, "actor": actor.actor_id},
    )
    return actor


def _instant(name: str) -> str | None:
    text = request.args.get(name)
    if text is None:
        return None
    parsed = parse_datetime(text)
    if parsed is None:
        raise BadRequest(f"{name} must be an RFC 3339 date-time")
    return format_datetime(parsed)


def register_audit(
    app: Quart,
    prefix: str,
    settings: Settings,
    service: Callable[[], Service],
    identity: Identity,
) -> None:
    """Add the audit routes to ``app``."""

    @app.get(f"{prefix}/_audit/verify")
    async def audit_verify() -> Response:
        actor = await _operator(settings, identity, "verify")
        running = service()
        checkpoints = []
        if settings.audit_checkpoints and Path(settings.audit_checkpoints).exists():
            try:
                checkpoints = read_checkpoints(
                    Path(settings.audit_checkpoints), checkpoint_key(settings)
                )
            except CheckpointError as exc:
                raise InternalError(f"The checkpoints cannot be read: {exc}") from None
        finding = await verify(running.storage, running.schema, actor.tenant_id, checkpoints)
        body = {"ok": True, "data": {**finding.as_json(), "checkpoints": len(checkpoints)}}
        return Response(jsonio.dumps(body), content_type=JSON)

    @app.get(f"{prefix}/_audit/export")
    async def audit_export() -> Response:
        actor = await _operator(settings, identity, "export")
        fmt = request.args.get("format", "ndjson")
        if fmt not in FORMATS:
            raise BadRequest(f"format must be one of {', '.join(FORMATS)}")
        since, until = _instant("since"), _instant("until")
        after_text = request.args.get("after")
        try:
            after = Position.parse(after_text) if after_text else None
        except ValueError:
            raise BadRequest("after must be the position of an exported record") from None
        lines = export_lines(
            audit_log(service()), actor.tenant_id, fmt=fmt, since=since, until=until, after=after
        )

        async def body() -> AsyncIterator[bytes]:
            async for line in lines:
                yield line.encode()

        return Response(body(), content_type=_MEDIA[fmt])
