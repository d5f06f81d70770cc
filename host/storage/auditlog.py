"""Reads of the audit log (``tessera_audit``): a tenant's records in a commit-safe order, and
the records of one row, newest first (docs/history.md).

**Order.** ``seq`` is taken when a record is inserted, before its transaction commits. On
SQLite writers are serialised, so ``seq`` is also the commit order. On PostgreSQL it is not: a
transaction holding ``seq`` 5 can commit after one holding 6, and a reader that walked ``seq``
would have passed 5 for good. So each record also stores its writing transaction's id
(``xact``, :attr:`Dialect.transaction_position`) and a walk of the log (:meth:`AuditLog.after`)

* orders records by the *position* (``xact``, ``seq``), and
* never reads a record whose transaction id is not below the oldest transaction still open
  (``pg_snapshot_xmin``), asked in a statement of its own *before* the read: every
  transaction below it has ended, and the read's later snapshot sees all of them; a
  transaction that has not written yet gets an id above it.

The records below that horizon are final: no later commit can ever add one there, so a
reader that resumes after the last position it read never skips a record. The price: a
transaction left open holds the horizon (and so every walker) back until it ends.

The history of one row (:meth:`AuditLog.of_row`) orders by ``seq``: every write of a row is
guarded by its ``_version`` (the row's lock is held until commit), so one row's records are
numbered in commit order on both backends.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.schema import CreateColumn

from host.storage.database import Storage, Tx
from host.storage.dialect import EvolutionDialect
from host.storage.dialects import Dialect
from host.storage.evolution import read_columns
from host.storage.schema import Schema
from host.storage.store import Runner

__all__ = [
    "STORED",
    "AuditEntry",
    "AuditLog",
    "Position",
    "add_audit_columns",
    "missing_audit_columns",
    "row_history",
]

STORED: Final = (  # the columns every read selects, in this order
    "xact",
    "seq",
    "id",
    "tenant_id",
    "actor_id",
    "roles",
    "action",
    "entity",
    "subject_id",
    "inputs",
    "outputs",
    "graph_hash",
    "created_at",
    "version",
    "changes",
    "via",
)


@dataclass(frozen=True, order=True, slots=True)
class Position:
    """Where a record sits in a tenant's walk of the log: (transaction id, ``seq``), each at
    most :data:`MAX_DIGITS` digits as text."""

    xact: int
    seq: int

    def __str__(self) -> str:
        return f"{self.xact}.{self.seq}"

    @classmethod
    def parse(cls, text: str) -> Position:
        """The position written as ``str(position)``.

        :raises ValueError: ``text`` is not one.
        """
        xact, _, seq = text.partition(".")
        if not (xact.isascii() and xact.isdigit() and seq.isascii() and seq.isdigit()):
            raise ValueError(f"not an audit log position: {text!r}")
        if max(len(xact), len(seq)) > MAX_DIGITS:  # none is that long (nor a 64-bit integer)
            raise ValueError(f"not an audit log position: {text[:40]!r}")
        return cls(int(xact), int(seq))


MAX_DIGITS: Final = 18
"""The most digits of a position's part as text (below 2**62, :data:`_BEYOND`)."""
START: Final = Position(-1, -1)
"""Before the first record."""
_BEYOND: Final = 2**62
"""Above every transaction id and ``seq``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class AuditEntry:
    """One stored audit record (JSON columns decoded)."""

    position: Position
    id: str
    tenant_id: str
    actor_id: str
    roles: tuple[str, ...]
    action: str
    entity: str
    subject_id: str
    inputs: Mapping[str, Any]
    outputs: Mapping[str, Any]
    graph_hash: str
    at: str
    """Database datetime text."""
    version: str | None
    """The row's ``_version`` after the write (``None`` on records written before issue 26,
    then taken from ``outputs`` where an update action reported it)."""
    changes: Mapping[str, Any] | None
    """``{field: [before, after]}`` (``None`` on records written before issue 26)."""
    via: tuple[Mapping[str, str], ...] = ()
    """The chain of a nested action's record: ``{"action", "plugin"}`` outermost first."""

    @property
    def seq(self) -> int:
        return self.position.seq

    @property
    def version_before(self) -> str | None:
        pair = (self.changes or {}).get("_version")
        return pair[0] if isinstance(pair, list) else None

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> AuditEntry:
        values = dict(zip(STORED, row, strict=True))
        outputs = json.loads(values["outputs"])
        version = values["version"]
        if version is None and isinstance(outputs, dict):
            version = outputs.get("_version")
        changes = values["changes"]
        return cls(
            position=Position(int(values["xact"]), int(values["seq"])),
            id=values["id"],
            tenant_id=values["tenant_id"],
            actor_id=values["actor_id"],
            roles=tuple(json.loads(values["roles"])),
            action=values["action"],
            entity=values["entity"],
            subject_id=values["subject_id"],
            inputs=json.loads(values["inputs"]),
            outputs=outputs,
            graph_hash=values["graph_hash"],
            at=values["created_at"],
            version=version,
            changes=None if changes is None else json.loads(changes),
            via=tuple(json.loads(values["via"])) if values["via"] else (),
        )


@lru_cache(maxsize=64)
def _row_history_sql(dialect: Dialect, table: str) -> str:
    columns = ", ".join(dialect.quote(name) for name in STORED)
    mark = dialect.placeholders(5)
    return (
        f"SELECT {columns} FROM {dialect.quote(table)} WHERE tenant_id = {mark[0]} "
        f"AND entity = {mark[1]} AND subject_id = {mark[2]} AND seq < {mark[3]} "
        f"ORDER BY seq DESC LIMIT {mark[4]}"
    )


async def row_history(
    runner: Runner,
    dialect: Dialect,
    table: str,
    tenant: str,
    entity: str,
    subject_id: str,
    before_seq: int | None,
    limit: int,
) -> list[AuditEntry]:
    """At most ``limit`` records of one row, newest first, older than ``before_seq``
    (``None``: from the newest), read on ``runner`` (a transaction or the storage)."""
    before = _BEYOND if before_seq is None else before_seq
    rows = await runner.rows(
        _row_history_sql(dialect, table), (tenant, entity, subject_id, before, limit)
    )
    return [AuditEntry.from_row(row) for row in rows]


class AuditLog:
    """Reads of one database's audit table."""

    def __init__(self, storage: Storage, schema: Schema) -> None:
        self._storage = storage
        self._dialect = dialect = storage.dialect
        self._table = schema.audit.name
        self._horizon_sql = dialect.oldest_open_transaction
        columns = ", ".join(dialect.quote(name) for name in STORED)
        mark = dialect.placeholders(5)
        self._after_sql = (
            f"SELECT {columns} FROM {dialect.quote(self._table)} WHERE tenant_id = {mark[0]} "
            f"AND (xact, seq) > ({mark[1]}, {mark[2]}) AND xact < {mark[3]} "
            f"ORDER BY xact, seq LIMIT {mark[4]}"
        )

    async def horizon(self) -> int:
        """The transaction id below which every record is final (beyond any id where
        writers are serialised)."""
        if self._horizon_sql is None:
            return _BEYOND
        ((value,),) = await self._storage.rows(self._horizon_sql)
        return int(value)

    async def after(self, tenant: str, position: Position | None, limit: int) -> list[AuditEntry]:
        """At most ``limit`` records of ``tenant`` after ``position`` (``None``: from the
        first), in position order, never past a transaction still open: a walk that resumes
        after the last position it read never skips a record (see the module's docs)."""
        horizon = await self.horizon()  # its own statement: the read below sees all below it
        rows = await self.stored_after(self._storage, tenant, position, horizon, limit)
        return [AuditEntry.from_row(row) for row in rows]

    async def stored_after(
        self,
        runner: Runner,
        tenant: str,
        position: Position | None,
        horizon: int,
        limit: int,
    ) -> Sequence[Sequence[Any]]:
        """:meth:`after` as stored (columns :data:`STORED`, JSON as text), on ``runner``,
        below a ``horizon`` the caller read in an earlier statement."""
        start = position or START
        return await runner.rows(self._after_sql, (tenant, start.xact, start.seq, horizon, limit))

    async def of_row(
        self, tenant: str, entity: str, subject_id: str, before_seq: int | None, limit: int
    ) -> list[AuditEntry]:
        """At most ``limit`` records of one row, newest first, older than ``before_seq``."""
        return await row_history(
            self._storage, self._dialect, self._table, tenant, entity, subject_id, before_seq, limit
        )


async def missing_audit_columns(
    tx: Tx, dialect: EvolutionDialect, schema: Schema
) -> list[sa.Column[Any]]:
    """The audit table's columns an older database lacks (none when the table does not exist
    yet: it is created whole)."""
    table = schema.audit
    present = (await read_columns(tx, dialect)).get(table.name)
    if not present:
        return []
    return [column for column in table.columns if column.name not in present]


async def add_audit_columns(tx: Tx, dialect: EvolutionDialect, schema: Schema) -> list[str]:
    """Add the audit table's columns an older database lacks (all nullable or defaulted);
    returns their names. Nothing when the table does not exist yet (it is created whole)."""
    table = schema.audit
    added = await missing_audit_columns(tx, dialect, schema)
    for column in added:
        spec = CreateColumn(column).compile(dialect=dialect.dialect)
        await tx.execute(sa.text(f"ALTER TABLE {dialect.sql.quote(table.name)} ADD COLUMN {spec}"))
    return [column.name for column in added]
