"""Record history over HTTP (docs/history.md): the history of one row through a projection
that shows it, and the detail of a row as of a version or an instant.

* ``GET /projections/<fqn>/history?subject=<id>[&pageSize=N][&cursor=C]``: the row's audit
  records, newest first, under the projection's read access; a row the reader may not see
  (unknown, of another tenant, outside the row scope or a read policy) is a 404 ``NotFound``
  that reads exactly like an unknown one (the endpoint: :mod:`host.http.routes.history`).
* ``asOf`` on the detail request (``GET /projections/<fqn>?subject=<id>&asOf=...``): the
  detail document with the row as it was (:func:`item_as_of`).
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final

from host.graph.model import CompiledProjection
from host.runtime import Actor
from host.runtime.history import parse_as_of, row_as_of
from host.service import Service
from host.storage import Storage
from host.storage.auditlog import AuditEntry, AuditLog
from host.storage.reads import DISPLAY_KEY
from plugin_api.errors import PolicyDenied

__all__ = ["AS_OF", "audit_log", "item_as_of", "may_read_history"]

AS_OF: Final = "asOf"
_SCAN: Final = 500
"""Records read per statement while rendering a row as of a past version."""

_logs: weakref.WeakKeyDictionary[Storage, AuditLog] = weakref.WeakKeyDictionary()


def audit_log(service: Service) -> AuditLog:
    """The audit log reader of a running service (one per storage, gone with it)."""
    log = _logs.get(service.storage)
    if log is None:
        log = _logs[service.storage] = AuditLog(service.storage, service.schema)
    return log


def may_read_history(service: Service, actor: Actor) -> None:
    """``TESSERA_HISTORY_ROLES``, when set: the reader needs one of them (403 otherwise)."""
    roles = service.settings.history_roles
    if roles and actor.roles.isdisjoint(roles):
        raise PolicyDenied(f"Record history requires one of the roles: {', '.join(roles)}")


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
    may_read_history(service, actor)
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
