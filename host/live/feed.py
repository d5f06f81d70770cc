"""What the live hub reads of the audit log: a tenant's new records in the commit-safe order
of :mod:`host.storage.auditlog` (below the horizon of transactions still open), the tail of
a tenant's log, and whether a position is one of its records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from host.storage.auditlog import AuditEntry, AuditLog, Position
from host.storage.database import Storage
from host.storage.schema import Schema

__all__ = ["ORIGIN", "AuditFeed", "Change"]

ORIGIN: Final = Position(0, 0)
"""Before every record of a tenant (the id of a stream whose tenant has written nothing)."""


@dataclass(frozen=True, slots=True)
class Change:
    """One committed write of a row, as a live stream tells it (nothing of its content)."""

    position: Position
    entity: str
    id: str
    version: str | None
    action: str
    at: str
    """Database datetime text of the write."""

    @classmethod
    def of(cls, entry: AuditEntry) -> Change:
        return cls(
            position=entry.position,
            entity=entry.entity,
            id=entry.subject_id,
            version=entry.version,
            action=entry.action,
            at=entry.at,
        )


class AuditFeed:
    """Reads of one database's audit log for the live hub."""

    def __init__(self, storage: Storage, schema: Schema) -> None:
        self._storage = storage
        self._log = AuditLog(storage, schema)
        dialect = storage.dialect
        table = dialect.quote(schema.audit.name)
        mark = dialect.placeholders(3)
        self._tail_sql = (
            f"SELECT xact, seq FROM {table} WHERE tenant_id = {mark[0]} AND xact < {mark[1]} "
            "ORDER BY xact DESC, seq DESC LIMIT 1"
        )
        self._settles = dialect.oldest_open_transaction is not None
        self._unsettled_sql = (
            f"SELECT 1 FROM {table} WHERE tenant_id = {mark[0]} AND xact >= {mark[1]} LIMIT 1"
        )
        self._exists_sql = (
            f"SELECT 1 FROM {table} WHERE tenant_id = {mark[0]} AND xact = {mark[1]} "
            f"AND seq = {mark[2]}"
        )

    async def horizon(self) -> int:
        """The transaction id below which every record is final."""
        return await self._log.horizon()

    async def after(
        self, tenant: str, position: Position, horizon: int, limit: int
    ) -> list[Change]:
        """At most ``limit`` changes of ``tenant`` after ``position``, below ``horizon`` (read
        in an earlier statement), in commit-safe order."""
        rows = await self._log.stored_after(self._storage, tenant, position, horizon, limit)
        return [Change.of(AuditEntry.from_row(row)) for row in rows]

    async def tail(self, tenant: str, horizon: int) -> Position:
        """The position of the tenant's last final record (:data:`ORIGIN` if none)."""
        rows = await self._storage.rows(self._tail_sql, (tenant, horizon))
        return Position(int(rows[0][0]), int(rows[0][1])) if rows else ORIGIN

    async def unsettled(self, tenant: str, horizon: int) -> bool:
        """Whether the tenant has committed records not yet below ``horizon`` (another
        transaction that began before theirs is still open): they become final soon."""
        if not self._settles:
            return False
        return bool(await self._storage.rows(self._unsettled_sql, (tenant, horizon)))

    async def holds(self, tenant: str, position: Position) -> bool:
        """Whether ``position`` is one of the tenant's records (or :data:`ORIGIN`)."""
        if position == ORIGIN:
            return True
        rows = await self._storage.rows(self._exists_sql, (tenant, position.xact, position.seq))
        return bool(rows)
