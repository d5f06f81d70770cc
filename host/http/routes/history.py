"""``GET /projections/<fqn>/history?subject=<id>[&pageSize=N][&cursor=C]`` (docs/history.md):
the row's audit records, newest first, under the projection's read access; a row the reader
may not see (unknown, of another tenant, outside the row scope or a read policy) is a 404
``NotFound`` that reads exactly like an unknown one."""

from __future__ import annotations

from typing import Any, Final

from quart import Response, request
from werkzeug.datastructures import Headers, MultiDict

from host import jsonio
from host.graph import Graph
from host.graph.model import CompiledProjection
from host.http.endpoint import Endpoint, Operations
from host.http.envelope import JSON
from host.http.history import audit_log, may_read_history
from host.http.openapi_parts import (
    IDENTITY_HEADERS,
    error_kinds,
    error_responses,
    json_answer,
    query_parameter,
    ref,
)
from host.http.site import Site
from host.http.viewschema import ViewSchemaTemplate
from host.query.conditions import Clause
from host.runtime import Actor
from host.runtime.access import ReadGate, needs_gate
from host.runtime.history import history_item
from host.service import Service
from plugin_api import errors as e
from plugin_api.errors import BadRequest, InternalError, NotFound, ProjectionNotFound

__all__ = ["HISTORY"]

DEFAULT_PAGE: Final = 50
MAX_PAGE: Final = 500
MAX_CURSOR_DIGITS: Final = 18
"""A cursor is a record's ``seq``: longer is none (and would overflow a 64-bit column)."""


def _single(args: MultiDict[str, str], name: str) -> str | None:
    values = args.getlist(name)
    if len(values) > 1:
        raise BadRequest(f"{name} given more than once")
    return values[0] if values else None


def _page_size(args: MultiDict[str, str]) -> int:
    text = _single(args, "pageSize")
    if text is None:
        return DEFAULT_PAGE
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_PAGE:
        raise BadRequest(f"pageSize must be an integer from 1 to {MAX_PAGE}")
    return int(text)


def _cursor(args: MultiDict[str, str]) -> int | None:
    text = _single(args, "cursor")
    if text is None:
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > MAX_CURSOR_DIGITS:
        raise BadRequest("cursor must be the pagination.nextCursor of the previous page")
    return int(text)


async def _visible_row(
    service: Service, gate: ReadGate, template: ViewSchemaTemplate, actor: Actor, subject: str
) -> dict[str, Any] | None:
    """The projection's row ``subject`` if ``actor`` may see it."""
    compiled = template.projection
    reads = service.reads
    scope: tuple[Clause, ...] = ()
    if needs_gate(compiled):  # the projection route's checks (the entity's floor too)
        scope = await gate.conditions(compiled, actor, reads.spec(compiled.fqn), subject)
    return await reads.one(compiled, actor.tenant_id, subject, scope)


def _operation(projection: CompiledProjection) -> dict[str, Any]:
    """``GET /projections/<fqn>/history``: a row's audit records (docs/history.md)."""
    entity = projection.entity.fqn
    kinds = error_kinds(BadRequest, InternalError, e.NotFound)
    identity = [ref("parameters", "X-Tenant-ID")]
    if projection.definition.access is not None or projection.entity.definition.access is not None:
        kinds = error_kinds(BadRequest, InternalError, e.NotFound, e.PolicyDenied)
        identity = [ref("parameters", name) for name in IDENTITY_HEADERS]
    return {
        "operationId": f"history.{projection.fqn}",
        "summary": f"History of a row of {entity} through {projection.fqn}",
        "description": "Every write of the row, newest first, paged by cursor: action, actor, "
        "time, `_version` before and after, and the changed fields this projection shows "
        "with their values before and after (`changes` is null on records written before "
        "Tessera kept them). Under the projection's read access: a row the reader may not "
        "see is a 404 NotFound, as an unknown one.",
        "tags": [entity],
        "parameters": [
            *identity,
            {
                "name": "subject",
                "in": "query",
                "required": True,
                "description": "The row's id.",
                "schema": {"type": "string"},
            },
            query_parameter(
                "pageSize",
                f"Records per page, 1 to {MAX_PAGE} (default {DEFAULT_PAGE}); else 400.",
                {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
            ),
            query_parameter(
                "cursor",
                "The `pagination.nextCursor` of the previous page; else 400.",
                {"type": "string", "pattern": f"^[0-9]{{1,{MAX_CURSOR_DIGITS}}}$"},
            ),
        ],
        "responses": {
            "200": json_answer("A page of the row's history", ref("schemas", "HistoryPage")),
            **error_responses(kinds),
        },
    }


class HistoryEndpoint(Endpoint):
    """One operation per projection (``history.<fqn>``); the reader is resolved as on every
    route."""

    name = "history"
    method = "GET"
    rule = "/projections/<fqn>/history"

    async def respond(self, site: Site, **path: str) -> Response:
        return await self.answer(site, path["fqn"], request.args, request.headers)

    async def answer(
        self, site: Site, fqn: str, args: MultiDict[str, str], headers: Headers
    ) -> Response:
        """The answer for these query parameters and headers (the console asks it in
        process, with its own identity headers)."""
        template = site.templates.get(fqn)
        if template is None:
            raise ProjectionNotFound(f"Unknown projection '{fqn}'")
        subject = _single(args, "subject")
        if subject is None:
            raise BadRequest("Missing required query parameter subject")
        page_size, before = _page_size(args), _cursor(args)
        running = site.service()
        actor = await site.identity.actor(headers)
        may_read_history(running, actor)
        tenant = actor.tenant_id
        row = await _visible_row(running, site.gate, template, actor, subject)
        if row is None:
            raise NotFound(f"No {template.projection.entity.fqn} with id '{subject}'")
        compiled = template.projection
        entries = await audit_log(running).of_row(
            tenant, compiled.entity.fqn, subject, before, page_size + 1
        )
        shown = frozenset(compiled.definition.fields)
        items = [history_item(entry, shown) for entry in entries[:page_size]]
        more = len(entries) > page_size
        body = {
            "ok": True,
            "projection": fqn,
            "subject": subject,
            "data": {
                "items": items,
                "pagination": {
                    "pageSize": page_size,
                    "nextCursor": str(entries[page_size - 1].seq) if more else None,
                },
            },
        }
        return Response(jsonio.dumps(body), content_type=JSON)

    def describe(self, graph: Graph) -> Operations:
        return {
            f"/projections/{fqn}/history": _operation(projection)
            for fqn, projection in sorted(graph.projections.items())
        }


HISTORY = HistoryEndpoint()
