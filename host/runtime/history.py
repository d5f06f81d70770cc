"""A row's history from its audit records: the items a reader sees, and the row as it was at
a version or an instant (docs/history.md).

Both work on :class:`~host.storage.auditlog.AuditEntry` records read newest first; nothing
here reads the database.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Mapping
from datetime import datetime
from typing import Any

from host.fieldtypes import ULID_LENGTH, format_datetime, parse_datetime, render_datetime
from host.storage.auditlog import AuditEntry
from plugin_api.data import HistoryRecord
from plugin_api.errors import BadRequest

__all__ = ["AsOf", "history_item", "parse_as_of", "public_record", "row_as_of"]

_CROCKFORD = frozenset("0123456789ABCDEFGHJKMNPQRSTVWXYZ")


def history_item(entry: AuditEntry, shown: Collection[str]) -> dict[str, Any]:
    """One record as the history route shows it: only the changed fields in ``shown`` (the
    projection's fields, a value that did not change never: a create lists no ``null ->
    null``); ``changes`` is null on records written before it was kept. A nested action's
    record names the chain that ran it under ``via`` (only there)."""
    changes: dict[str, Any] | None = None
    if entry.changes is not None:
        changes = {
            name: {"before": pair[0], "after": pair[1]}
            for name, pair in entry.changes.items()
            if name in shown and name != "_version" and pair[0] != pair[1]
        }
    item: dict[str, Any] = {
        "eventId": entry.id,
        "action": entry.action,
        "actor": {"id": entry.actor_id, "roles": list(entry.roles)},
        "at": render_datetime(entry.at),
        "versionBefore": entry.version_before,
        "versionAfter": entry.version,
        "changes": changes,
    }
    if entry.via:
        item["via"] = [dict(hop) for hop in entry.via]
    return item


def public_record(entry: AuditEntry) -> HistoryRecord:
    """A record as the data API gives it (every field the write changed)."""
    changes = None
    if entry.changes is not None:
        changes = {
            name: (pair[0], pair[1])
            for name, pair in entry.changes.items()
            if name != "_version" and pair[0] != pair[1]
        }
    return HistoryRecord(
        seq=entry.seq,
        event_id=entry.id,
        action=entry.action,
        actor_id=entry.actor_id,
        roles=entry.roles,
        at=str(render_datetime(entry.at)),
        version_before=entry.version_before,
        version_after=entry.version,
        changes=changes,
    )


AsOf = str | datetime
"""A ``_version`` (a ULID) or an instant (naive UTC)."""


def parse_as_of(text: str) -> AsOf:
    """``asOf``: a ``_version`` or an RFC 3339 instant; 400 ``BadRequest`` otherwise."""
    if len(text) == ULID_LENGTH and _CROCKFORD.issuperset(text):
        return text
    instant = parse_datetime(text)
    if instant is None:
        raise BadRequest(
            f"asOf must be a _version of the row or an RFC 3339 date-time, got {text!r}"
        )
    return instant


def _reached(entry: AuditEntry, target: AsOf) -> bool:
    if isinstance(target, str):
        return entry.version == target
    return entry.at <= format_datetime(target)


async def row_as_of(
    current: Mapping[str, Any], records: AsyncIterator[AuditEntry], target: AsOf
) -> dict[str, Any]:
    """``current`` (a rendered row) as it was right after the write that made version
    ``target``, or the last write at or before instant ``target``: the values each newer
    record changed are put back, newest first.

    :raises BadRequest: ``target`` is not a version of this row, the row did not exist yet
        at that instant, or a record on the way does not hold the values it changed
        (written before they were kept).
    """
    row = dict(current)
    async for entry in records:
        if _reached(entry, target):
            if "_version" in row:
                row["_version"] = entry.version
            if "updated_at" in row:
                row["updated_at"] = render_datetime(entry.at)
            return row
        if entry.changes is None:
            raise BadRequest(
                f"The history of this row before {render_datetime(entry.at)} does not hold "
                "the values each write changed: it cannot be rendered as of an earlier time"
            )
        if entry.version_before is None:  # its creation: nothing older
            break
        for name, (before, _after) in entry.changes.items():
            if name in row:
                row[name] = before
    if isinstance(target, str):
        raise BadRequest(f"{target!r} is not a _version of this row")
    raise BadRequest(f"The row did not exist at {render_datetime(target)}")
