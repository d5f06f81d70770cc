"""Reading and operating the timers table (the view of a row's timers, ``tessera timers``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from host.fieldtypes import format_datetime, now_db, parse_datetime
from host.storage import Closing, Storage, Tx
from host.storage.timers import CANCELLED, PENDING, TimerStatements
from host.timers.firing import TimerRow

__all__ = [
    "cancel_timer",
    "count_pending",
    "list_timers",
    "make_due",
    "purge_settled",
    "settled_before",
    "timers_of",
]


async def timers_of(storage: Storage, tenant: str, entity: str, subject: str) -> list[TimerRow]:
    """A row's pending timers, earliest first."""
    sql = TimerStatements(storage.dialect)
    rows = await storage.rows(*sql.of_subject(tenant, entity, subject))
    return [TimerRow.of(row) for row in rows]


async def list_timers(
    storage: Storage,
    *,
    tenant: str | None = None,
    states: Sequence[str] = (PENDING,),
    limit: int = 100,
) -> list[TimerRow]:
    """Timers in ``states`` (of ``tenant``, or every tenant), earliest due first."""
    sql = TimerStatements(storage.dialect)
    q = storage.dialect.quote
    marks = storage.dialect.placeholders(len(states) + 2)
    where = f"{q('state')} IN ({', '.join(marks[: len(states)])})"
    args: list[object] = list(states)
    if tenant is not None:
        where += f" AND {q('tenant_id')} = {marks[len(states)]}"
        args.append(tenant)
    text = (
        f"SELECT {sql.select_list} FROM {sql.table} WHERE {where} "
        f"ORDER BY {q('due_at')}, {q('id')} LIMIT {int(limit)}"
    )
    rows = await storage.rows(text, args)
    return [TimerRow.of(row) for row in rows]


async def count_pending(storage: Storage) -> tuple[int, int]:
    """(pending timers, of which overdue now)."""
    sql = TimerStatements(storage.dialect)
    q = storage.dialect.quote
    (mark,) = storage.dialect.placeholders(1)
    text = (
        f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN {q('due_at')} <= {mark} THEN 1 ELSE 0 END), 0)"
        f" FROM {sql.table} WHERE {q('state')} = '{PENDING}'"
    )
    rows = await storage.rows(text, (now_db(),))
    return int(rows[0][0]), int(rows[0][1])


async def _pending_update(storage: Storage, tenant: str, id: str, assignment: str) -> bool:
    q = storage.dialect.quote
    sql = TimerStatements(storage.dialect)
    marks = storage.dialect.placeholders(3)
    text = (
        f"UPDATE {sql.table} SET {assignment.format(mark=marks[0])} WHERE {q('tenant_id')} = "
        f"{marks[1]} AND {q('id')} = {marks[2]} AND {q('state')} = '{PENDING}' RETURNING {q('id')}"
    )

    async def work(tx: Tx) -> Closing[bool]:
        return Closing(bool(await tx.rows(text, (now_db(), tenant, id))))

    return await storage.unit_of_work(work)


async def make_due(storage: Storage, tenant: str, id: str) -> bool:
    """Make a pending timer due now (``tessera timers fire``: the next pass of any worker
    fires it); False when it is not pending."""
    return await _pending_update(storage, tenant, id, storage.dialect.quote("due_at") + " = {mark}")


async def cancel_timer(storage: Storage, tenant: str, id: str) -> bool:
    """Cancel a pending timer; False when it is not pending."""
    q = storage.dialect.quote
    assignment = f"{q('state')} = '{CANCELLED}', {q('fired_at')} = {{mark}}"
    return await _pending_update(storage, tenant, id, assignment)


def settled_before(retention_s: float) -> str:
    """The instant ``retention_s`` seconds ago (database text): settled timers older go."""
    now = parse_datetime(now_db())
    assert now is not None
    return format_datetime(now - timedelta(seconds=retention_s))


async def purge_settled(storage: Storage, before: str, batch: int, batches: int) -> int:
    """Delete settled timers (fired, failed, cancelled) settled before ``before``, ``batch``
    rows per transaction, at most ``batches`` transactions; answer how many went."""
    sql = TimerStatements(storage.dialect)

    async def one(tx: Tx) -> Closing[int]:
        return Closing(len(await tx.rows(*sql.purge(before, batch))))

    total = 0
    for _ in range(batches):
        deleted = await storage.unit_of_work(one)
        total += deleted
        if deleted < batch:
            break
    return total
