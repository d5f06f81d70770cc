"""Record history over HTTP (docs/history.md): the history of one row through a projection
that shows it, and the detail of a row as of a version or an instant.

* ``GET /projections/<fqn>/history?subject=<id>[&pageSize=N][&cursor=C]``: the row's audit
  records, newest first, under the projection's read access; a row the reader may not see
  (unknown, of another tenant, outside the row scope or a read policy) is a 404 ``NotFound``
  that reads exactly like an unknown one.
* ``asOf`` on the detail request (``GET /projections/<fqn>?subject=<id>&asOf=...``): the
  detail document with the row as it was (:func:`item_as_of`).
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

from quart import Quart, Response, request

from host import jsonio
from host.auth import Identity
from host.graph.model import CompiledProjection
from host.http.envelope import JSON
from host.http.viewschema import ViewSchemaTemplate
from host.query.conditions import Clause
from host.runtime import Actor
from host.runtime.access import ReadGate, needs_gate
from host.runtime.history import history_item, parse_as_of, row_as_of
from host.service import Service
from host.storage import Storage
from host.storage.auditlog import AuditEntry, AuditLog
from host.storage.reads import DISPLAY_KEY
from plugin_api.errors import BadRequest, NotFound, PolicyDenied, ProjectionNotFound

__all__ = ["AS_OF", "item_as_of", "register_history"]

AS_OF: Final = "asOf"
DEFAULT_PAGE: Final = 50
MAX_PAGE: Final = 500
_SCAN: Final = 500
"""Records read per statement while rendering a row as of a past version."""

_logs: weakref.WeakKeyDictionary[Storage, AuditLog] = weakref.WeakKeyDictionary()


def audit_log(service: Service) -> AuditLog:
    """The audit log reader of a running service (one per storage, gone with it)."""
    log = _logs.get(service.storage)
    if log is None:
        log = _logs[service.storage] = AuditLog(service.storage, service.schema)
    return log


def _single(name: str) -> str | None:
    values = request.args.getlist(name)
    if len(values) > 1:
        raise BadRequest(f"{name} given more than once")
    return values[0] if values else None


def _page_size() -> int:
    text = _single("pageSize")
    if text is None:
        return DEFAULT_PAGE
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_PAGE:
        raise BadRequest(f"pageSize must be an integer from 1 to {MAX_PAGE}")
    return int(text)


def _cursor() -> int | None:
    text = _single("cursor")
    if text is None:
        return None
    if not (text.isascii() and text.isdigit()):
        raise BadRequest("cursor must be the pagination.nextCursor of the previous page")
    return int(text)


def _may_read_history(service: Service, actor: Actor) -> None:
    """``TESSERA_HISTORY_ROLES``, when set: the reader needs one of them (403 otherwise)."""
    roles = service.settings.history_roles
    if roles and actor.roles.isdisjoint(roles):
        raise PolicyDenied(f"Record history requires one of the roles: {', '.join(roles)}")


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


async def _records(
    log: AuditLog, tenant: str, projection: CompiledProjection, subject: str
) -> AsyncIterator[AuditEntry]:
    """Every record of the row, newest first, read a bounded number at a time."""
    before: int | None = None
    while True:
        entries = await log.of_row(tenant, projection.entity.fqn, subject, before, _SCAN)
        for entry in entries:
            yield entry
        if len(entries) < _SCAN:
            return
        before = entries[-1].seq


async def item_as_of(
    service: Service,
    projection: CompiledProjection,
    tenant: str,
    item: Mapping[str, Any] | None,
    text: str,
    actor: Actor,
) -> dict[str, Any] | None:
    """The detail's ``item`` as it was at ``text`` (``asOf``: a ``_version`` or an
    instant); an item the reader does not see stays ``None``.

    :raises BadRequest: ``text`` is neither, or not a version of this row (see
        :func:`host.runtime.history.row_as_of`).
    """
    _may_read_history(service, actor)
    target = parse_as_of(text)
    if item is None:
        return None
    records = _records(audit_log(service), tenant, projection, str(item["id"]))
    return _followed_as_of(item, await row_as_of(item, records, target))


def _followed_as_of(current: Mapping[str, Any], past: dict[str, Any]) -> dict[str, Any]:
    """Followed fields (``project.key``) and display texts are the referenced rows' values
    now; where the reference itself was another then, they are null (never another row's)."""
    moved = {name for name, value in past.items() if "." not in name and current[name] != value}
    for name in past:
        if "." in name and name.partition(".")[0] in moved:
            past[name] = None
    texts = past.get(DISPLAY_KEY)
    if isinstance(texts, dict):
        past[DISPLAY_KEY] = {ref: None if ref in moved else text for ref, text in texts.items()}
    return past


def register_history(
    app: Quart,
    prefix: str,
    templates: Mapping[str, ViewSchemaTemplate],
    gate: ReadGate,
    service: Callable[[], Service],
    identity: Identity,
) -> None:
    """Add the history route to ``app`` (the reader resolved by ``identity``, as on every
    route)."""

    @app.get(f"{prefix}/projections/<fqn>/history")
    async def row_history(fqn: str) -> Response:
        template = templates.get(fqn)
        if template is None:
            raise ProjectionNotFound(f"Unknown projection '{fqn}'")
        subject = _single("subject")
        if subject is None:
            raise BadRequest("Missing required query parameter subject")
        page_size, before = _page_size(), _cursor()
        running = service()
        actor = await identity.actor(request.headers)
        _may_read_history(running, actor)
        tenant = actor.tenant_id
        row = await _visible_row(running, gate, template, actor, subject)
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
