"""The entity store: the one place where entity rows become SQL and SQL rows become entity rows.

Built once per graph (:class:`EntityStore`). The action chain (:mod:`host.runtime.engine`)
and the plugins' data API (:mod:`host.runtime.data`) write through it, and the projection
route reads through it:

* writes: :meth:`EntityStore.insert` and :meth:`EntityStore.update` (the guarded
  ``UPDATE ... RETURNING``) are the only places that set system-field values (``id``,
  ``tenant_id``, ``created_at``, ``updated_at``, ``_version``);
* the closing statements of an action: the audit record (:meth:`EntityStore.audit`, the
  one spelling of its eleven values) and the event's deliveries, chained into one statement
  where the dialect can (:meth:`EntityStore.closing`);
* reads: one row by key (:meth:`EntityStore.get`), existence (:meth:`EntityStore.exists`),
  rows matching conditions (:meth:`EntityStore.find`, the data API's), and the projection
  lists of :mod:`host.storage.reads`.

Statements are SQL text built once per shape (:mod:`host.storage.sql`) and run on whatever
runner the caller holds: the action's :class:`~host.storage.Tx` or the
:class:`~host.storage.Storage` itself for a read outside a transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from host import jsonio
from host.fieldtypes import INT64_MAX, INT64_MIN
from host.graph.model import CompiledEntity, Graph
from host.query.conditions import Clause, Condition
from host.query.params import plain_query
from host.query.spec import ID_COLUMN
from host.storage import sql
from host.storage.dialects import Dialect
from host.storage.listsql import select_list
from host.storage.rows import RowRenderer, all_columns
from host.storage.schema import Schema
from host.storage.search import searched_fields, shadow_values, with_search_key
from host.storage.textlimits import check_text_limits, indexed_text_limits
from host.storage.tx import Statement
from host.systemfields import SYSTEM, new_ulid

__all__ = ["AuditRecord", "EntityStore", "Runner", "Written", "audit_values"]


class Runner(Protocol):
    """What runs the store's statements: a unit of work's ``Tx`` or the ``Storage``."""

    async def rows(self, sql: str, args: Sequence[Any] = ()) -> Sequence[Sequence[Any]]: ...


@dataclass(frozen=True, slots=True)
class Written:
    """A row write, ready to run: its ``statement``, the row's ``id`` and new ``_version``,
    and ``values``: every column written (database values, system fields included)."""

    statement: Statement
    id: str
    version: str
    values: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True, slots=True)
class AuditRecord:
    """One audit record: ``action`` caused a write of row ``subject_id`` of ``entity``.

    ``inputs`` and ``outputs`` are JSON-ready (read shapes); ``at`` is database datetime text.
    """

    event_id: str
    tenant_id: str
    actor_id: str
    roles: frozenset[str]
    action: str
    entity: str
    subject_id: str
    inputs: Mapping[str, Any]
    outputs: Mapping[str, Any]
    at: str
    version: str | None = None
    """The row's ``_version`` after the write."""
    changes: Mapping[str, Any] | None = None
    """The fields written: ``{field: [before, after]}`` in read shapes (``before`` null for a
    new row), with ``_version``'s pair (docs/history.md)."""
    via: tuple[tuple[str, str], ...] = ()
    """The (action, plugin) pairs whose ``ctx.data.run`` caused this record, outermost first
    (empty: an action a client asked for)."""


class _EntityStatements:
    """One entity's table, columns, renderer and fixed statements."""

    __slots__ = ("exists", "render", "searched", "select_one", "table", "version_at")

    def __init__(
        self, entity: CompiledEntity, table: str, dialect: Dialect, searched: tuple[str, ...]
    ) -> None:
        self.table = table
        self.searched = searched
        """The fields a list searches: written with their folded copy (host.storage.search)."""
        self.render = RowRenderer(entity, all_columns(entity))
        self.select_one = sql.select_one(dialect, table, self.render.columns)
        self.exists = sql.select_one(dialect, table, ("id",))
        self.version_at = self.render.columns.index("_version")


class EntityStore:
    """Rows of every entity of one graph, in one database dialect."""

    def __init__(self, graph: Graph, schema: Schema, dialect: Dialect) -> None:
        self.graph = graph
        self.schema = schema
        self.dialect = dialect
        searched = searched_fields(graph)
        self._entities = {
            fqn: _EntityStatements(
                entity, schema.entities[fqn].name, dialect, searched.get(fqn, ())
            )
            for fqn, entity in graph.entities.items()
        }
        self._audit_sql = sql.insert(
            dialect, schema.audit.name, schema.audit_columns, {"xact": dialect.transaction_position}
        )
        self._text_limits = indexed_text_limits(graph)

    # -- rows of an entity ------------------------------------------------------------------

    def renderer(self, entity: str) -> RowRenderer:
        """The renderer of ``entity``'s whole rows (system fields first)."""
        return self._entities[entity].render

    def version_of(self, entity: str, row: Sequence[Any]) -> str:
        """The ``_version`` of a whole row as :meth:`get` returns it."""
        version: str = row[self._entities[entity].version_at]
        return version

    async def get(
        self, runner: Runner, entity: str, tenant_id: str, row_id: str
    ) -> Sequence[Any] | None:
        """The whole row ``row_id`` of the tenant (positional, in the renderer's column
        order), or ``None``."""
        found = await runner.rows(self._entities[entity].select_one, (tenant_id, row_id))
        return found[0] if found else None

    async def find(
        self,
        runner: Runner,
        entity: str,
        tenant_id: str,
        conditions: tuple[Condition, ...],
        limit: int,
        scope: tuple[Clause, ...] = (),
    ) -> Sequence[Sequence[Any]]:
        """Whole rows of the tenant matching every condition, in id order, at most ``limit``
        (the SQL of list filters: :func:`host.storage.listsql.select_list`); ``scope``: the
        reader's row conditions (a read floor)."""
        statements = self._entities[entity]
        text, args = select_list(
            self.dialect,
            statements.table,
            statements.render.columns,
            plain_query(scope, conditions=conditions, limit=limit),
            search=(),
            id_column=ID_COLUMN,
            tenant=tenant_id,
            after=None,
            limit=limit,
        )
        return await runner.rows(text, args)

    async def exists(self, runner: Runner, entity: str, tenant_id: str, row_id: str) -> bool:
        """Whether the tenant has the row ``row_id`` of ``entity``."""
        return bool(await runner.rows(self._entities[entity].exists, (tenant_id, row_id)))

    # -- writes -----------------------------------------------------------------------------

    def insert(self, entity: str, tenant_id: str, values: Mapping[str, Any], now: str) -> Written:
        """The ``INSERT`` of a new row of ``entity`` holding ``values`` (database values of
        declared fields); the system fields are set here, and only here.

        :raises ValueError: ``values`` names a system field.
        :raises BadRequest: a listed text field is too long (:mod:`host.storage.textlimits`).
        """
        _no_system_fields(values)
        check_text_limits(self._text_limits.get(entity, {}), values)
        row_id, version = new_ulid(), new_ulid()
        written = {
            "tenant_id": tenant_id,
            "id": row_id,
            "created_at": now,
            "updated_at": now,
            "_version": version,
            **values,
        }
        statements = self._entities[entity]
        columns = {**written, **shadow_values(statements.searched, values)}
        statement = sql.insert(self.dialect, statements.table, tuple(columns))
        if statements.searched:
            statement = with_search_key(self.dialect, statements.table, statement)
        return Written((statement, tuple(columns.values())), row_id, version, written)

    def update(
        self,
        entity: str,
        tenant_id: str,
        row_id: str,
        read_version: str,
        changes: Mapping[str, Any],
        now: str,
        before: Mapping[str, Any] | None = None,
    ) -> Written:
        """The guarded ``UPDATE ... RETURNING`` of ``changes`` to the row ``row_id`` as read
        at ``read_version``: it returns no row when a concurrent write changed it since.
        ``updated_at`` and ``_version`` are set here, and only here.

        ``before``: the row as read (database values). A change to the value the row holds
        already is left out of the statement (the written row is the same): an unchanged
        searched field then costs no search-index maintenance (SQLite's FTS5 triggers fire
        on the shadow column being set, whatever its value).

        :raises ValueError: ``changes`` names a system field.
        :raises BadRequest: a listed text field is too long (:mod:`host.storage.textlimits`).
        """
        _no_system_fields(changes)
        check_text_limits(self._text_limits.get(entity, {}), changes)
        version = new_ulid()
        written = {"updated_at": now, "_version": version, **changes}
        statements = self._entities[entity]
        kept = changes if before is None else {
            k: v for k, v in changes.items() if not _holds(before, k, v)
        }  # fmt: skip
        columns = {
            "updated_at": now,
            "_version": version,
            **kept,
            **shadow_values(statements.searched, kept),
        }
        statement = sql.guarded_update(self.dialect, statements.table, tuple(columns))
        args = (*columns.values(), tenant_id, row_id, read_version)
        return Written((statement, args), row_id, version, written)

    async def increment(
        self,
        runner: Runner,
        entity: str,
        tenant_id: str,
        row_id: str,
        field: str,
        by: int,
        now: str,
    ) -> tuple[str, int | None, Sequence[Any]] | None:
        """Add ``by`` to the integer ``field`` of the row (null counts as 0), with a new
        ``updated_at`` and ``_version``, without a version guard: concurrent increments
        wait for each other and all apply. Return the version and the value before and the
        whole row after, or ``None`` when the tenant has no such row or the sum would leave the
        64-bit range (:meth:`exists` tells which)."""
        statements = self._entities[entity]
        texts = sql.increment(
            self.dialect, statements.table, statements.render.columns, field, by >= 0
        )
        bound = INT64_MAX - by if by >= 0 else INT64_MIN - by
        version = new_ulid()
        if len(texts) == 1:  # one statement: the version and the value before come first
            found = await runner.rows(texts[0], (by, now, version, tenant_id, row_id, bound))
            return (found[0][0], found[0][1], found[0][2:]) if found else None
        read = await runner.rows(texts[0], (tenant_id, row_id, bound))
        if not read:
            return None
        found = await runner.rows(texts[1], (by, now, version, tenant_id, row_id, bound))
        return (read[0][0], read[0][1], found[0])

    # -- closing statements of an action ----------------------------------------------------

    def audit(self, record: AuditRecord) -> Statement:
        """The ``INSERT`` of an audit record (values in ``Schema.audit_columns`` order)."""
        return (self._audit_sql, audit_values(record, self.graph.hash))

    def closing(
        self,
        write: Statement,
        audit: Statement | Exception,
        deliveries: Statement | None,
    ) -> tuple[Statement | Exception, ...]:
        """The statements an action ends with: its row's write, its audit record and its
        event's deliveries (if any). Where the dialect can, the audit record and the
        deliveries are one statement (one round trip)."""
        if deliveries is None:
            return (write, audit)
        if self.dialect.chains_writes and not isinstance(audit, Exception):
            text = self.dialect.chained(audit[0], len(audit[1]), deliveries[0])
            return (write, (text, (*audit[1], *deliveries[1])))
        return (write, audit, deliveries)


def _holds(row: Mapping[str, Any], name: str, value: Any) -> bool:
    """Whether ``row`` holds ``value`` in ``name`` already (the same type and value)."""
    return name in row and type(row[name]) is type(value) and row[name] == value


def _no_system_fields(values: Mapping[str, Any]) -> None:
    if not SYSTEM.keys().isdisjoint(values):
        named = ", ".join(sorted(SYSTEM.keys() & values.keys()))
        raise ValueError(f"system fields are set by the entity store, not given: {named}")


def audit_values(record: AuditRecord, graph_hash: str) -> tuple[Any, ...]:
    """The stored values of an audit record, in ``Schema.audit_columns`` order: the one
    spelling of them, for an action's or a data-API write's record
    (:meth:`EntityStore.audit`) and a migrated row's (:mod:`host.storage.migrated`)."""
    return (
        record.event_id,
        record.tenant_id,
        record.actor_id,
        jsonio.dumps(sorted(record.roles)).decode(),
        record.action,
        record.entity,
        record.subject_id,
        jsonio.dumps(record.inputs).decode(),
        jsonio.dumps(record.outputs).decode(),
        graph_hash,
        record.at,
        record.version,
        None if record.changes is None else jsonio.dumps(record.changes).decode(),
        via_text(record.via),
    )


def via_text(via: tuple[tuple[str, str], ...]) -> str | None:
    """The stored form of an audit record's chain (``None`` when empty)."""
    if not via:
        return None
    return jsonio.dumps([{"action": action, "plugin": plugin} for action, plugin in via]).decode()
