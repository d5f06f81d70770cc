"""The operator's audit routes (docs/history.md): verify the tenant's hash chain and export its
audit records. Both need one of ``TESSERA_AUDIT_ROLES`` (default ``auditor``) and every call
is logged on ``tessera.audit`` (who, which tenant, what).

* ``GET /_audit/verify``: the tenant's chain against its seals and the signed checkpoints.
* ``GET /_audit/export?format=ndjson|csv[&since=...][&until=...][&after=POSITION]``: the
  tenant's records, streamed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from quart import Response, request

from host import jsonio
from host.fieldtypes import format_datetime, parse_datetime
from host.graph import Graph
from host.http.endpoint import Endpoint, Operations
from host.http.envelope import JSON
from host.http.history import audit_log
from host.http.jsonschema import object_schema
from host.http.openapi_parts import (
    IDENTITY_HEADERS,
    error_kinds,
    error_responses,
    json_answer,
    query_parameter,
    ref,
    response_headers,
)
from host.http.site import Site
from host.runtime.actor import Actor
from host.storage.auditchain import CheckpointError, configured_checkpoints, verify
from host.storage.auditexport import FORMATS, export_lines
from host.storage.auditlog import MAX_DIGITS, Position
from plugin_api import errors as e
from plugin_api.errors import BadRequest, InternalError, PolicyDenied

__all__ = ["AUDIT_EXPORT", "AUDIT_VERIFY"]

logger = logging.getLogger("tessera.audit")

POSITION_TEXT = f"^(?:[0-9]{{1,{MAX_DIGITS}}}\\.[0-9]{{1,{MAX_DIGITS}}})?$"
"""An exported record's position, or nothing (from the first)."""
_MEDIA = {"ndjson": "application/x-ndjson", "csv": "text/csv; charset=utf-8"}


async def _operator(site: Site, what: str) -> Actor:
    settings = site.settings
    actor = await site.identity.actor(request.headers)
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


class AuditVerify(Endpoint):
    """The tenant's chain against its seals and the signed checkpoints."""

    name = "audit_verify"
    method = "GET"
    rule = "/_audit/verify"
    operator = True

    async def respond(self, site: Site, **path: str) -> Response:
        settings = site.settings
        actor = await _operator(site, "verify")
        running = site.service()
        try:
            checkpoints = configured_checkpoints(settings)
        except CheckpointError as exc:
            raise InternalError(f"The checkpoints cannot be read: {exc}") from None
        finding = await verify(
            running.storage,
            running.schema,
            actor.tenant_id,
            checkpoints,
            interval=settings.audit_seal_s,
        )
        body = {"ok": True, "data": {**finding.as_json(), "checkpoints": len(checkpoints)}}
        return Response(jsonio.dumps(body), content_type=JSON)

    def describe(self, graph: Graph) -> Operations:
        finding = object_schema(
            {
                "ok": {"const": True},
                "data": object_schema(
                    {
                        "tenant": {"type": "string"},
                        "ok": {"type": "boolean"},
                        "checked": {"type": "integer", "minimum": 0},
                        "message": {"type": "string"},
                        "n": {"type": ["integer", "null"]},
                        "record": {"type": ["string", "null"]},
                        "unsealed": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "Records newer than the last seal (not verified); "
                            "the answer fails when one is older than the sealing interval.",
                        },
                        "checkpoints": {"type": "integer", "minimum": 0},
                    },
                    [
                        "tenant",
                        "ok",
                        "checked",
                        "message",
                        "n",
                        "record",
                        "unsealed",
                        "checkpoints",
                    ],
                ),
            },
            ["ok", "data"],
        )
        return {
            "/_audit/verify": _operation(
                "auditVerify",
                "Verify the tenant's audit hash chain",
                "Recomputes the tenant's chain from its stored records and compares it with "
                "the seals and the signed checkpoints (TESSERA_AUDIT_CHECKPOINTS); `data.ok` "
                "false names the first record that breaks it (docs/history.md).",
                [],
                {"200": json_answer("The finding", finding)},
            )
        }


class AuditExport(Endpoint):
    """The tenant's records, streamed as NDJSON or CSV."""

    name = "audit_export"
    method = "GET"
    rule = "/_audit/export"
    operator = True

    async def respond(self, site: Site, **path: str) -> Response:
        actor = await _operator(site, "export")
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
            audit_log(site.service()),
            actor.tenant_id,
            fmt=fmt,
            since=since,
            until=until,
            after=after,
        )

        async def body() -> AsyncIterator[bytes]:
            async for line in lines:
                yield line.encode()

        return Response(body(), content_type=_MEDIA[fmt])

    def describe(self, graph: Graph) -> Operations:
        records = {
            "description": "The records, oldest position first, streamed: NDJSON (one "
            "record per line) or CSV (a header line, nested values as JSON).",
            "headers": response_headers(),
            "content": {
                "application/x-ndjson": {"schema": {"type": "string"}},
                "text/csv": {"schema": {"type": "string"}},
            },
        }
        instant = {"type": "string", "format": "date-time"}
        return {
            "/_audit/export": _operation(
                "auditExport",
                "Export the tenant's audit records",
                "Every record of the tenant written at or after `since` and before `until`, "
                "after the position `after` (resume an interrupted export with the last "
                "exported position).",
                [
                    query_parameter(
                        "format",
                        "`ndjson` (default) or `csv`; anything else 400.",
                        {"enum": list(FORMATS), "default": "ndjson"},
                    ),
                    query_parameter("since", "An RFC 3339 instant (else 400).", instant),
                    query_parameter("until", "An RFC 3339 instant (else 400).", instant),
                    query_parameter(
                        "after",
                        "The position of an exported record (`<xact>.<seq>`; else 400).",
                        {"type": "string", "pattern": POSITION_TEXT},
                    ),
                ],
                {"200": records},
            )
        }


def _operation(
    operation_id: str,
    summary: str,
    description: str,
    parameters: list[dict[str, Any]],
    responses: dict[str, Any],
) -> dict[str, Any]:
    """An audit operation: an operator's, with the role rule and the refusals they share."""
    kinds = error_kinds(e.BadRequest, e.PolicyDenied, e.InternalError)
    return {
        "operationId": operation_id,
        "summary": summary,
        "description": f"{description} An operator's route: needs one of "
        "TESSERA_AUDIT_ROLES (default `auditor`, else 403 PolicyDenied); every call is "
        "logged on `tessera.audit`.",
        "tags": ["operator"],
        "parameters": [*(ref("parameters", name) for name in IDENTITY_HEADERS), *parameters],
        "responses": {**responses, **error_responses(kinds)},
    }


AUDIT_VERIFY = AuditVerify()
AUDIT_EXPORT = AuditExport()
