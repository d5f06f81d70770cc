"""A row's pending timers in its detail document at ViewSchema 1.5.0 (docs/timers.md): under
``data.timers``, earliest first, each ``{"timer", "action", "dueAt", "overdue"}``; only for an
entity some timer is declared on (no read otherwise)."""

from __future__ import annotations

from typing import Any

from host.fieldtypes import now_db, render_datetime
from host.graph.model import Graph
from host.storage import Storage
from host.timers.queries import timers_of

__all__ = ["add_row_timers"]


async def add_row_timers(
    graph: Graph, storage: Storage, entity: str, tenant: str, subject: str, document: Any
) -> None:
    """Add ``data.timers`` to a detail ``document`` of row ``subject`` of ``entity``."""
    if entity not in graph.timers.by_entity:
        return
    now = now_db()
    document["data"]["timers"] = [
        {
            "timer": row.timer,
            "action": row.action,
            "dueAt": render_datetime(row.due_at),
            "overdue": row.due_at <= now,
        }
        for row in await timers_of(storage, tenant, entity, subject)
    ]
