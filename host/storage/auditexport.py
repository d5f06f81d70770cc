"""Export of a tenant's audit records as NDJSON or CSV (docs/history.md, "Export").

Streamed: records are read :data:`PAGE` at a time in the commit-safe order of
:class:`~host.storage.auditlog.AuditLog`, so memory stays bounded whatever the size, and each
line carries its record's ``position``: an export cut off is resumed with ``after`` = the
last position received.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator
from typing import Any, Final

from host.fieldtypes import render_datetime
from host.storage.auditlog import AuditEntry, AuditLog, Position

__all__ = ["COLUMNS", "FORMATS", "export_lines"]

PAGE: Final = 1000
FORMATS: Final = ("ndjson", "csv")
COLUMNS: Final = (
    "position",
    "id",
    "tenant",
    "actor",
    "roles",
    "action",
    "entity",
    "subject",
    "at",
    "versionAfter",
    "changes",
    "inputs",
    "outputs",
    "graphHash",
    "via",
)


def _record(entry: AuditEntry) -> dict[str, Any]:
    return {
        "position": str(entry.position),
        "id": entry.id,
        "tenant": entry.tenant_id,
        "actor": entry.actor_id,
        "roles": list(entry.roles),
        "action": entry.action,
        "entity": entry.entity,
        "subject": entry.subject_id,
        "at": render_datetime(entry.at),
        "versionAfter": entry.version,
        "changes": entry.changes,
        "inputs": entry.inputs,
        "outputs": entry.outputs,
        "graphHash": entry.graph_hash,
        "via": list(entry.via) or None,
    }


def _csv_line(values: list[Any]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(values)
    return out.getvalue()


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


async def export_lines(
    log: AuditLog,
    tenant: str,
    *,
    fmt: str = "ndjson",
    since: str | None = None,
    until: str | None = None,
    after: Position | None = None,
) -> AsyncIterator[str]:
    """The lines of the export: records of ``tenant`` after ``after`` written at or after
    ``since`` and before ``until`` (database datetime text), oldest position first; CSV
    starts with a header line (nested values as JSON)."""
    if fmt == "csv" and after is None:
        yield _csv_line(list(COLUMNS))
    while True:
        page = await log.after(tenant, after, PAGE)
        for entry in page:
            if (since is not None and entry.at < since) or (
                until is not None and entry.at >= until
            ):
                continue
            record = _record(entry)
            if fmt == "csv":
                yield _csv_line(
                    [v if isinstance(v, str) or v is None else _json(v) for v in record.values()]
                )
            else:
                yield _json(record) + "\n"
        if len(page) < PAGE:
            return
        after = page[-1].position
