"""Schema evolution: diff the database's recorded graph against the installed one.

Both sides are read from their canonical JSON form (the recorded one from ``tessera_graph``,
the installed one from :attr:`Graph.canonical`), so the diff never depends on plugin code of
the old version. Each change is classified (:class:`~host.storage.plan.ChangeClass`) with the
rows it affects, counted by one aggregate query per entity (plus, for a type change, a paged
scan that tries every stored value against the new type, holding one page at a time).

A database with entity tables but no recorded graph (prepared before the history existed),
or an entity whose table is left over from an earlier life, is diffed against the table's
actual columns: missing columns are added, unknown ones reported as removed fields.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.schema import CreateTable

from host.fieldtypes import coerce_default, column_type
from host.graph.checks import table_name
from host.graph.model import CompiledEntity, Graph
from host.storage.convert import (
    Converter,
    Unconvertible,
    builtin_converter,
    plugin_converter,
)
from host.storage.database import Tx
from host.storage.dialect import IDENTIFIER_MAX_LENGTH, EvolutionDialect
from host.storage.history import GRAPH_TABLE, latest_record
from host.storage.indexes import index_changes
from host.storage.names import ASIDE_PREFIX, primary_key
from host.storage.plan import (
    Backfill,
    Change,
    ChangeClass,
    Convert,
    MapValues,
    Operation,
    Plan,
    Statement,
    table_clause,
)
from host.storage.progress import NO_PROGRESS, Progress
from host.storage.renames import name_changes
from host.storage.schema import Schema, reference_index_name
from host.storage.searchplan import search_changes
from host.storage.tenantkeys import key_changes
from plugin_api.definitions import SYSTEM_FIELDS, Field

__all__ = ["aside_name", "build_plan", "read_columns"]

JSONObject = dict[str, Any]
Counts = Mapping[str, int]
Pending = Callable[[Counts], Awaitable[Change]]
Item = Pending | Change

SCAN_PAGE: Final = 500
"""Rows read per query when checking that a type change can convert every value."""
SAMPLES: Final = 5
"""Unconvertible rows, or rows breaking a declared rule, named in a report (the count is
always exact)."""
ASIDE_STAMP_DIGITS: Final = 12
"""Hex digits of the target graph hash in a moved-aside name."""

META = ChangeClass.METADATA
ADDITIVE = ChangeClass.ADDITIVE
BREAKING = ChangeClass.BREAKING


async def read_columns(tx: Tx, dialect: EvolutionDialect) -> dict[str, list[str]]:
    """Every table of the database with its columns, in order."""
    columns: dict[str, list[str]] = {}
    for row in await tx.fetch_all(dialect.columns_query()):
        columns.setdefault(str(row["table_name"]), []).append(str(row["column_name"]))
    return columns


def aside_name(name: str, stamp: str, taken: Sequence[str]) -> str:
    """``_removed_<name>_<stamp>``, shortened (with a hash) to fit an identifier, and made
    unique among ``taken``."""
    base = f"{ASIDE_PREFIX}{name}_{stamp}"
    if len(base) > IDENTIFIER_MAX_LENGTH - 3:
        digest = hashlib.sha256(name.encode()).hexdigest()[:6]
        room = IDENTIFIER_MAX_LENGTH - 3 - len(ASIDE_PREFIX) - len(stamp) - len(digest) - 2
        base = f"{ASIDE_PREFIX}{name[:room]}_{digest}_{stamp}"
    candidate, counter = base, 1
    while candidate in taken:
        counter += 1
        candidate = f"{base}_{counter}"
    return candidate


def _definitions(document: Mapping[str, Any]) -> dict[tuple[str, str], JSONObject]:
    return {(d["kind"], d["attributes"]["fqn"]): d for d in document.get("definitions", ())}


def _fields(attributes: Mapping[str, Any]) -> dict[str, JSONObject]:
    return {f["name"]: f for f in attributes.get("fields", ())}


def _quote_list(values: Sequence[str]) -> str:
    return ", ".join(repr(v) for v in values)


class _Counter:
    """Collects the counts one entity's changes need; one aggregate query answers them."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.expressions: dict[str, sa.ColumnElement[Any]] = {"rows": sa.func.count()}

    def nonnull(self, column: str) -> str:
        key = f"nonnull:{column}"
        self.expressions[key] = sa.func.count(sa.column(column))
        return key

    def among(self, column: str, values: Sequence[str]) -> str:
        key = f"among:{column}:" + "\x00".join(values)
        self.expressions[key] = sa.func.count(
            sa.case((sa.column(column).in_(values), sa.literal_column("1")))
        )
        return key

    async def run(self, tx: Tx) -> dict[str, int]:
        labelled = [expr.label(f"c{i}") for i, expr in enumerate(self.expressions.values())]
        row = await tx.fetch_one(sa.select(*labelled).select_from(sa.table(self.table)))
        assert row is not None
        return {key: int(row[f"c{i}"] or 0) for i, key in enumerate(self.expressions)}


class _Differ:
    """Builds the changes of one plan."""

    def __init__(
        self,
        tx: Tx,
        dialect: EvolutionDialect,
        graph: Graph,
        schema: Schema,
        columns: Mapping[str, list[str]],
        stamp: str,
        progress: Progress = NO_PROGRESS,
    ) -> None:
        self.tx = tx
        self.dialect = dialect
        self.graph = graph
        self.schema = schema
        self.columns = columns
        self.stamp = stamp
        self.progress = progress
        self.sources: dict[str, str] = {}
        self.moved_aside: dict[str, str] = {}
        """Tables of removed entities: the name they are kept under -> their name."""
        """Entity FQN -> the table its rows are in now (the old name of a renamed entity)."""

    # -- entities -------------------------------------------------------------------------

    def added_entity(self, entity: CompiledEntity) -> Change:
        table = self.schema.entities[entity.fqn]
        sql = str(CreateTable(table).compile(dialect=self.dialect.dialect)).strip()
        return Change(
            kind="entity-added",
            change_class=ADDITIVE,
            subject=f"entity {entity.fqn!r}",
            outcome=f"table {entity.table_name} created",
            sql=(sql,),
            # Created here rather than by ``Storage.prepare`` afterwards: the plan's list
            # indexes (``index-added``) are built on it in the same evolution.
            operations=(Statement(sql.replace(":", "\\:")),),
        )

    async def removed_entity(self, fqn: str, table: str, old: Mapping[str, Any]) -> Change:
        counts = await _Counter(table).run(self.tx)
        aside = aside_name(table, self.stamp, list(self.columns))
        self.moved_aside[aside] = table
        # The table's objects named after it go (its reference indexes) or take its new name
        # (its primary key): the name may be an entity's table again (host/storage/names.py).
        sql = [
            self.dialect.rename_table(table, aside),
            *self._references_dropped(table, old),
            *self._primary_key_renamed(table, aside),
        ]
        return Change(
            kind="entity-removed",
            change_class=BREAKING if counts["rows"] else ADDITIVE,
            subject=f"entity {fqn!r}",
            detail="no installed plugin declares it",
            affected_rows=counts["rows"],
            outcome=f"table {table} kept, renamed {aside}",
            sql=tuple(sql),
            operations=tuple(Statement(statement) for statement in sql),
        )

    def _references_dropped(self, table: str, old: Mapping[str, Any]) -> list[str]:
        """Drop the reference indexes of ``table`` (``old``: its entity's recorded
        definition)."""
        return [
            f"DROP INDEX IF EXISTS {self.dialect.quote(reference_index_name(table, item['name']))}"
            for item in old.get("fields", ())
            if item.get("type") == "reference"
        ]

    def _primary_key_renamed(self, table: str, new: str) -> list[str]:
        """PostgreSQL: the primary key of ``table``, renamed ``new``, named after it (SQLite's
        keys are not named objects)."""
        if self.dialect.sql.embedded:
            return []
        old_key, new_key = (self.dialect.quote(primary_key(name)) for name in (table, new))
        return [f"ALTER TABLE {self.dialect.quote(new)} RENAME CONSTRAINT {old_key} TO {new_key}"]

    def renamed_entity(
        self, old_fqn: str, old: Mapping[str, Any], entity: CompiledEntity
    ) -> Change:
        source = table_name(old_fqn)
        table = entity.table_name
        # A reference index keeps its name when its table is renamed: drop it, the schema
        # creates it under the new name.
        sql = [
            self.dialect.rename_table(source, table),
            *self._references_dropped(source, old),
            *self._primary_key_renamed(source, table),
        ]
        return Change(
            kind="entity-renamed",
            change_class=ADDITIVE,
            subject=f"entity {old_fqn!r} -> {entity.fqn!r}",
            detail=f"declared by {entity.plugin.describe()}",
            outcome=f"table {source} renamed {table}, rows kept; audit records written before "
            f"keep naming {old_fqn!r}",
            sql=tuple(sql),
            operations=tuple(Statement(statement) for statement in sql),
        )

    def _renamed_field(self, entity: CompiledEntity, old: str, new: str, reference: bool) -> Change:
        source = self._source(entity)
        sql = [self.dialect.rename_column(entity.table_name, old, new)]
        if reference:
            index = reference_index_name(source, old)
            sql.append(f"DROP INDEX IF EXISTS {self.dialect.quote(index)}")
        return Change(
            kind="field-renamed",
            change_class=ADDITIVE,
            subject=f"field {old!r} -> {new!r} of entity {entity.fqn!r}",
            detail=f"declared by {entity.plugin.describe()}",
            outcome="column renamed, values kept",
            sql=tuple(sql),
            operations=tuple(Statement(statement) for statement in sql),
        )

    async def entity(
        self,
        entity: CompiledEntity,
        old: Mapping[str, Any] | None,
        source: str | None = None,
    ) -> list[Change]:
        """Changes of an entity whose table exists (as ``source`` when the entity was
        renamed). ``old`` is its recorded definition, or ``None`` to compare against the
        table's columns."""
        source = source or entity.table_name
        self.sources[entity.fqn] = source
        existing = self.columns[source]
        new_attrs = _definitions(json.loads(self.graph.canonical))[("entity", entity.fqn)]
        new_attrs = new_attrs["attributes"]
        if old is None:
            old_fields: dict[str, JSONObject] = {
                c: {"name": c, "type": None}
                for c in existing
                if c not in SYSTEM_FIELDS and not c.startswith("_")
            }
        else:
            old_fields = _fields(old)
        new_fields = _fields(new_attrs)
        renamed: dict[str, str] = {}  # new name -> old name
        if old is not None:
            for name in old_fields:
                if name in new_fields or name not in existing:
                    continue
                new = self.graph.migrations.renamed_field(entity.fqn, name, new_fields)
                if new is not None and new not in old_fields and new not in renamed:
                    renamed[new] = name
        counter = _Counter(source)
        pending: list[Item] = [
            self._renamed_field(
                entity, old_name, new_name, old_fields[old_name].get("type") == "reference"
            )
            for new_name, old_name in renamed.items()
        ]
        for name in old_fields:
            if name not in new_fields and name not in renamed.values():
                reference = old_fields[name].get("type") == "reference"
                pending.append(self._removed_field(entity, name, counter, reference))
        workflow_states = {
            w["state_field"] for w in (new_attrs.get("workflow"), (old or {}).get("workflow")) if w
        }
        for name, new_json in new_fields.items():
            field = entity.fields[name]
            column = renamed.get(name, name)
            if column not in old_fields:
                pending.append(self._added_field(entity, field, counter))
            elif old_fields[column]["type"] is not None:
                pending.extend(
                    self._changed_field(
                        entity,
                        old_fields[column],
                        field,
                        new_json,
                        name in workflow_states,
                        counter,
                        column,
                    )
                )
        counts = await counter.run(self.tx) if pending else {}
        changes = [item if isinstance(item, Change) else await item(counts) for item in pending]
        if old is not None:
            changes.extend(_entity_metadata(entity.fqn, old, new_attrs))
        return changes

    # -- fields ---------------------------------------------------------------------------

    def _subject(self, entity: CompiledEntity, name: str) -> str:
        return f"field {name!r} of entity {entity.fqn!r}"

    def _source(self, entity: CompiledEntity) -> str:
        return self.sources.get(entity.fqn, entity.table_name)

    def _aside(self, entity: CompiledEntity, name: str) -> str:
        return aside_name(name, self.stamp, self.columns[self._source(entity)])

    async def _sample_ids(
        self, entity: CompiledEntity, condition: sa.ColumnElement[bool]
    ) -> tuple[str, ...]:
        """Some ``tenant/id`` of the rows matching ``condition`` (in key order)."""
        t = sa.table(self._source(entity), sa.column("tenant_id"), sa.column("id"))
        rows = await self.tx.fetch_all(
            sa.select(t.c.tenant_id, t.c.id)
            .where(condition)
            .order_by(t.c.tenant_id, t.c.id)
            .limit(SAMPLES)
        )
        return tuple(f"{row['tenant_id']}/{row['id']}" for row in rows)

    def _fill_nulls(
        self, table: str, field: Field, operations: list[Operation], sql: list[str]
    ) -> bool:
        """Append the backfill of a non-nullable field's default into its nulls; ``False``
        when the field is nullable or has no default."""
        fill = None if field.nullable or not field.has_default else coerce_default(field)
        if fill is None:
            return False
        backfill = Backfill(table, field.name, field, fill, only_null=True)
        operations.append(backfill)
        sql.append(self._update_sql(backfill))
        return True

    def _removed_field(
        self, entity: CompiledEntity, name: str, counter: _Counter, reference: bool
    ) -> Pending:
        key = counter.nonnull(name) if name in self.columns[self._source(entity)] else None

        async def build(counts: Counts) -> Change:
            aside = self._aside(entity, name)
            sql = [self.dialect.rename_column(entity.table_name, name, aside)]
            if reference:  # a column kept aside needs no index (host/storage/renames.py)
                index = reference_index_name(self._source(entity), name)
                sql.append(f"DROP INDEX IF EXISTS {self.dialect.quote(index)}")
            return Change(
                kind="field-removed",
                change_class=BREAKING,
                subject=self._subject(entity, name),
                detail="rows holding a value" if key else "no column",
                affected_rows=counts[key] if key else 0,
                outcome=f"column kept, renamed {aside}" if key else "nothing to do",
                sql=tuple(sql) if key else (),
                operations=tuple(Statement(s) for s in sql) if key else (),
            )

        return build

    def _added_field(self, entity: CompiledEntity, field: Field, counter: _Counter) -> Pending:
        table = entity.table_name

        async def build(counts: Counts) -> Change:
            add = self.dialect.add_column(table, field.name, column_type(field))
            rows = counts["rows"]
            operations: list[Operation] = [Statement(add)]
            sql = [add]
            violations, samples = 0, tuple[str, ...]()
            if field.has_default and coerce_default(field) is not None:
                value = coerce_default(field)
                backfill = Backfill(table, field.name, field, value, only_null=False)
                operations.append(backfill)
                sql.append(self._update_sql(backfill))
                outcome = f"existing rows get the default {json.dumps(field.default)}"
            elif not field.nullable and rows:
                outcome = "existing rows would be left null"
                violations, samples = rows, await self._sample_ids(entity, sa.true())
            else:
                outcome = "existing rows are null"
            required = field.required and rows > 0
            return Change(
                kind="field-added",
                change_class=BREAKING if required else ADDITIVE,
                subject=self._subject(entity, field.name),
                detail=f"type {field.type.value}"
                + (", required, no default" if field.required else ""),
                affected_rows=rows,
                outcome=outcome,
                sql=tuple(sql),
                operations=tuple(operations),
                violations=violations,
                violation_samples=samples,
                remedy="give the field a default, or make it nullable",
            )

        return build

    def _update_sql(self, backfill: Backfill) -> str:
        table = table_clause(backfill.table, backfill.column, backfill.field)
        statement = sa.update(table).values({backfill.column: backfill.value})
        if backfill.only_null:
            statement = statement.where(table.c[backfill.column].is_(None))
        return self.dialect.render(statement)

    def _changed_field(
        self,
        entity: CompiledEntity,
        old: Mapping[str, Any],
        field: Field,
        new: Mapping[str, Any],
        is_state: bool,
        counter: _Counter,
        column: str,
    ) -> list[Item]:
        """Changes of a field kept (``column``: its name in the database before the plan)."""
        name = field.name
        subject = self._subject(entity, name)
        if old["type"] != new["type"]:
            return [self._type_changed(entity, old, field, counter.nonnull(column), column)]
        pending: list[Item] = []
        if old.get("currency") != new.get("currency"):
            pending.append(self._currency_changed(entity, old, field, counter.nonnull(column)))
        removed = [o for o in old.get("options", ()) if o not in new.get("options", ())]
        added = [o for o in new.get("options", ()) if o not in old.get("options", ())]
        if removed:
            pending.append(self._options_removed(entity, field, removed, is_state, counter, column))
        if added:
            pending.append(
                Change(
                    kind="enum-option-added",
                    change_class=ADDITIVE,
                    subject=subject,
                    detail=f"option(s) {_quote_list(added)} added",
                )
            )
        if old.get("nullable") and not new.get("nullable"):
            pending.append(self._required(entity, field, counter.nonnull(column), column))
        details = [
            f"{attr} {old.get(attr, '(none)')!r} -> {new.get(attr, '(none)')!r}"
            for attr in ("label", "max_length", "default")
            if old.get(attr, "(none)") != new.get(attr, "(none)")
        ]
        if not old.get("nullable") and new.get("nullable"):
            details.append("now nullable")
        if not removed and not added and old.get("options") != new.get("options"):
            details.append("options reordered")
        if details:
            pending.append(
                Change(
                    kind="field-metadata",
                    change_class=META,
                    subject=subject,
                    detail="; ".join(details),
                )
            )
        return pending

    def _options_removed(
        self,
        entity: CompiledEntity,
        field: Field,
        removed: Sequence[str],
        is_state: bool,
        counter: _Counter,
        column: str,
    ) -> Pending:
        keys = {option: counter.among(column, [option]) for option in removed}
        mapping = self.graph.migrations.option_maps.get((entity.fqn, field.name), {})
        kind = "state-removed" if is_state else "enum-option-removed"
        what = "state(s)" if is_state else "option(s)"

        async def build(counts: Counts) -> Change:
            held = {option: counts[key] for option, key in keys.items() if counts[key]}
            mapped = tuple((o, mapping[o]) for o in held if o in mapping)
            unmapped = [o for o in held if o not in mapping]
            samples: tuple[str, ...] = ()
            if unmapped:
                samples = await self._sample_ids(entity, sa.column(column).in_(unmapped))
            moved = [f"{held[o]} in {o!r} -> {json.dumps(n)}" for o, n in mapped]
            operation = MapValues(
                entity.table_name, field.name, field, mapped, sum(held[o] for o, _ in mapped)
            )
            outcome = "; ".join(moved) if moved else ""
            return Change(
                kind=kind,
                change_class=BREAKING if held else META,
                subject=self._subject(entity, field.name),
                detail=f"{what} {_quote_list(removed)} removed; rows holding them",
                affected_rows=sum(held.values()),
                outcome=outcome,
                sql=(self._map_sql(operation),) if mapped else (),
                operations=(operation,) if mapped else (),
                violations=sum(held[o] for o in unmapped),
                violation_samples=samples,
                remedy=(
                    f"map {_quote_list(unmapped)} with "
                    + ("MapStates" if is_state else "MapOptions")
                    + " in tessera_migrations"
                ),
            )

        return build

    def _map_sql(self, operation: MapValues) -> str:
        return self.dialect.render(map_statement(operation))

    def _converter(
        self, entity: CompiledEntity, old_type: str, old_currency: str | None, field: Field
    ) -> tuple[Converter, str]:
        conversion = self.graph.migrations.conversion(
            entity.fqn, field.name, old_type, field.type.value
        )
        if conversion is None:
            return builtin_converter(old_type, old_currency, field), "the host's conversion"
        converter = plugin_converter(conversion.declaration, old_type, old_currency, field)
        return converter, f"the {conversion.describe()}"

    def _type_changed(
        self,
        entity: CompiledEntity,
        old: Mapping[str, Any],
        field: Field,
        key: str,
        column: str,
    ) -> Pending:
        table = entity.table_name
        old_type, old_currency = str(old["type"]), old.get("currency")
        converter, via = self._converter(entity, old_type, old_currency, field)

        async def build(counts: Counts) -> Change:
            aside = self._aside(entity, field.name)
            scan = _Scan()
            if counts[key]:
                scan = await self._scan(entity, column, converter, counts[key])
            move = self.dialect.rename_column(table, field.name, aside)
            add = self.dialect.add_column(table, field.name, column_type(field))
            convert_sql = (
                f"UPDATE {self.dialect.quote(table)} SET {self.dialect.quote(field.name)} = "
                f"<converted {self.dialect.quote(aside)}> WHERE tenant_id = ... AND id = ... "
                f"(in pages of {SCAN_PAGE}, {counts[key]} row(s))"
            )
            operations: list[Operation] = [
                Statement(move),
                Statement(add),
                Convert(
                    table, aside, field.name, field, converter, counts[key], old_type, old_currency
                ),
            ]
            sql = [move, add, convert_sql]
            left_null = counts["rows"] - counts[key] + scan.failed + scan.emptied
            violations, samples = 0, tuple[str, ...]()
            outcome = f"old column kept, renamed {aside}; values converted"
            if left_null and self._fill_nulls(table, field, operations, sql):
                outcome += f"; {left_null} left without a value get the default"
            elif left_null and not field.nullable:
                violations = left_null
                samples = (scan.samples + scan.empty_samples)[:SAMPLES]
                if len(samples) < SAMPLES and counts["rows"] > counts[key]:
                    samples += await self._sample_ids(entity, sa.column(column).is_(None))
                    samples = samples[:SAMPLES]
            elif scan.failed:
                outcome += f", {scan.failed} left null"
            return Change(
                kind="type-changed",
                change_class=BREAKING,
                subject=self._subject(entity, field.name),
                detail=f"{old_type} -> {field.type.value}; rows holding a value",
                affected_rows=counts[key],
                unconvertible=scan.failed,
                samples=scan.samples,
                via=via,
                reason=scan.reason,
                outcome=outcome,
                sql=tuple(sql),
                operations=tuple(operations),
                violations=violations,
                violation_samples=samples,
                remedy="give the field a default, or convert every value "
                "(ConvertField in tessera_migrations)",
            )

        return build

    async def _scan(
        self, entity: CompiledEntity, column: str, converter: Converter, total: int
    ) -> _Scan:
        scan = _Scan()
        source = self._source(entity)
        self.progress.start(f"checking {source}.{column}", total)
        async for page in page_values(self.tx, source, column):
            for tenant, row_id, value in page:
                try:
                    converted = converter(value)
                except Unconvertible as exc:
                    scan.failed += 1
                    scan.reason = scan.reason or str(exc)
                    if len(scan.samples) < SAMPLES:
                        scan.samples += (f"{tenant}/{row_id}",)
                    continue
                if converted is None:
                    scan.emptied += 1
                    if len(scan.empty_samples) < SAMPLES:
                        scan.empty_samples += (f"{tenant}/{row_id}",)
            self.progress.advance(len(page))
        self.progress.finish()
        return scan

    def _currency_changed(
        self, entity: CompiledEntity, old: Mapping[str, Any], field: Field, key: str
    ) -> Pending:
        table = entity.table_name

        async def build(counts: Counts) -> Change:
            held = counts[key]
            aside = self._aside(entity, field.name)
            move = self.dialect.rename_column(table, field.name, aside)
            add = self.dialect.add_column(table, field.name, column_type(field))
            operations: list[Operation] = [Statement(move), Statement(add)]
            sql = [move, add]
            violations, samples = 0, tuple[str, ...]()
            outcome = f"amounts kept unconverted in {aside}; the field starts null"
            if held and self._fill_nulls(table, field, operations, sql):
                outcome = f"amounts kept unconverted in {aside}; the field gets its default"
            elif held and not field.nullable:
                violations, samples = counts["rows"], await self._sample_ids(entity, sa.true())
            return Change(
                kind="currency-changed",
                change_class=BREAKING if held else META,
                subject=self._subject(entity, field.name),
                detail=f"{old.get('currency')} -> {field.currency}; rows holding an amount",
                affected_rows=held,
                outcome=outcome if held else "",
                sql=tuple(sql) if held else (),
                operations=tuple(operations) if held else (),
                violations=violations,
                violation_samples=samples,
                remedy="give the field a default, or make it nullable",
            )

        return build

    def _required(self, entity: CompiledEntity, field: Field, key: str, column: str) -> Pending:
        table = entity.table_name

        async def build(counts: Counts) -> Change:
            nulls = counts["rows"] - counts[key]
            subject = self._subject(entity, field.name)
            detail = "nullable -> required; rows holding null"
            if nulls and field.has_default and coerce_default(field) is not None:
                backfill = Backfill(table, field.name, field, coerce_default(field), True)
                return Change(
                    kind="field-required",
                    change_class=ADDITIVE,
                    subject=subject,
                    detail=detail + ", backfilled with the default",
                    affected_rows=nulls,
                    outcome=f"null values set to the default {json.dumps(field.default)}",
                    sql=(self._update_sql(backfill),),
                    operations=(backfill,),
                )
            samples: tuple[str, ...] = ()
            if nulls:
                samples = await self._sample_ids(entity, sa.column(column).is_(None))
            return Change(
                kind="field-required",
                change_class=BREAKING if nulls else META,
                subject=subject,
                detail=detail,
                affected_rows=nulls,
                outcome="rows would be left null" if nulls else "",
                violations=nulls,
                violation_samples=samples,
                remedy="give the field a default",
            )

        return build


class _Scan:
    """What trying every stored value of a type change found."""

    __slots__ = ("emptied", "empty_samples", "failed", "reason", "samples")

    def __init__(self) -> None:
        self.failed = 0
        self.samples: tuple[str, ...] = ()
        self.reason = ""
        self.emptied = 0
        """Values the conversion turned into null."""
        self.empty_samples: tuple[str, ...] = ()


def map_statement(operation: MapValues) -> sa.Update:
    """``UPDATE ... SET column = CASE column WHEN old THEN new ... END WHERE column IN``."""
    table = table_clause(operation.table, operation.column, operation.field)
    column = table.c[operation.column]
    olds = [old for old, _ in operation.mapping]
    return (
        sa.update(table)
        .values({operation.column: sa.case(dict(operation.mapping), value=column)})
        .where(column.in_(olds))
    )


async def page_values(tx: Tx, table: str, column: str) -> Any:
    """Yield the pages (lists of (tenant_id, id, value)) of every row where ``column`` is not
    null, in key order, one page (:data:`SCAN_PAGE` rows) in memory at a time."""
    t = sa.table(table, sa.column("tenant_id"), sa.column("id"), sa.column(column))
    after: tuple[str, str] | None = None
    while True:
        query = sa.select(t.c.tenant_id, t.c.id, t.c[column]).where(t.c[column].is_not(None))
        if after is not None:
            query = query.where(sa.tuple_(t.c.tenant_id, t.c.id) > sa.tuple_(*after))
        rows = await tx.fetch_all(query.order_by(t.c.tenant_id, t.c.id).limit(SCAN_PAGE))
        if rows:
            yield [(row["tenant_id"], row["id"], row[column]) for row in rows]
        if len(rows) < SCAN_PAGE:
            return
        after = (rows[-1]["tenant_id"], rows[-1]["id"])


def _entity_metadata(fqn: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    changes: list[Change] = []
    old_order = [f["name"] for f in old.get("fields", ())]
    new_order = [f["name"] for f in new.get("fields", ())]
    kept_old = [n for n in old_order if n in new_order]
    kept_new = [n for n in new_order if n in old_order]
    if kept_old != kept_new:
        changes.append(
            Change(kind="field-order-changed", change_class=META, subject=f"entity {fqn!r}")
        )
    if old.get("workflow") != new.get("workflow"):
        changes.append(
            Change(
                kind="workflow-changed",
                change_class=META,
                subject=f"entity {fqn!r}",
                detail="transitions, initial state or state field",
            )
        )
    return changes


def _other_metadata(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    changes: list[Change] = []
    old_defs, new_defs = _definitions(old), _definitions(new)
    for key in sorted(old_defs.keys() | new_defs.keys()):
        kind, fqn = key
        if kind == "entity" or old_defs.get(key) == new_defs.get(key):
            continue
        verb = "added" if key not in old_defs else "removed" if key not in new_defs else "changed"
        changes.append(Change(kind=f"{kind}-{verb}", change_class=META, subject=f"{kind} {fqn!r}"))
    for kind in ("policies", "effects"):
        gone = sorted(set(old.get(kind, ())) - set(new.get(kind, ())))
        came = sorted(set(new.get(kind, ())) - set(old.get(kind, ())))
        if gone or came:
            detail = "; ".join(
                part
                for part in (
                    f"added {_quote_list(came)}" if came else "",
                    f"removed {_quote_list(gone)}" if gone else "",
                )
                if part
            )
            changes.append(
                Change(kind=f"{kind}-changed", change_class=META, subject=kind, detail=detail)
            )
    return changes


async def build_plan(
    tx: Tx,
    dialect: EvolutionDialect,
    graph: Graph,
    schema: Schema,
    progress: Progress = NO_PROGRESS,
) -> Plan:
    """The plan from the database's current graph to ``graph`` (reads only). Names moved
    aside carry the first 12 hex digits of ``graph``'s hash, so the plan printed by
    ``migrate --plan`` is the SQL that ``--apply`` and a start run."""
    columns = await read_columns(tx, dialect)
    record = await latest_record(tx) if GRAPH_TABLE in columns else None
    database_hash = record.graph_hash if record else None

    def plan(changes: Sequence[Change]) -> Plan:
        return Plan(
            dialect=dialect.name,
            database_hash=database_hash,
            graph_hash=graph.hash,
            changes=tuple(changes),
        )

    # First: the rest of the plan names generated objects as the host does now.
    names = await name_changes(tx, dialect)
    keys = await key_changes(tx, dialect, schema)
    if record is not None and record.graph_hash == graph.hash:
        # A database prepared by a host without the text index of search gets it all the same.
        return plan((*names, *keys, *await search_changes(tx, dialect, graph, columns)))
    old_document: Mapping[str, Any] = json.loads(record.canonical) if record else {}
    old_defs = _definitions(old_document)
    differ = _Differ(tx, dialect, graph, schema, columns, graph.hash[:ASIDE_STAMP_DIGITS], progress)
    renamed = _renamed_entities(graph, old_defs, columns)
    changes: list[Change] = list(names)
    for fqn in sorted(graph.entities):
        entity = graph.entities[fqn]
        old = old_defs.get(("entity", fqn))
        if fqn in renamed:
            old_fqn = renamed[fqn]
            old_attrs = old_defs[("entity", old_fqn)]["attributes"]
            changes.append(differ.renamed_entity(old_fqn, old_attrs, entity))
            changes.extend(await differ.entity(entity, old_attrs, table_name(old_fqn)))
        elif entity.table_name not in columns:
            changes.append(differ.added_entity(entity))
        else:
            changes.extend(await differ.entity(entity, old["attributes"] if old else None))
    for kind, fqn in sorted(old_defs):
        if kind != "entity" or fqn in graph.entities or fqn in renamed.values():
            continue
        if table_name(fqn) in columns:
            old_attrs = old_defs[(kind, fqn)]["attributes"]
            changes.append(await differ.removed_entity(fqn, table_name(fqn), old_attrs))
    changes.extend(await index_changes(tx, dialect, graph))
    changes.extend(keys)
    rewritten = {
        (operation.table, operation.column)
        for change in changes
        for operation in change.operations
        if isinstance(operation, (Backfill, Convert, MapValues))
    }
    moved = {graph.entities[new].table_name: table_name(old) for new, old in renamed.items()}
    moved.update(differ.moved_aside)
    changes.extend(await search_changes(tx, dialect, graph, columns, moved, rewritten))
    if record is not None:
        changes.extend(_other_metadata(old_document, json.loads(graph.canonical)))
    return plan(changes)


def _renamed_entities(
    graph: Graph, old_defs: Mapping[tuple[str, str], JSONObject], columns: Mapping[str, Any]
) -> dict[str, str]:
    """Installed FQN -> recorded FQN, for the entity renames the plugins declare that apply:
    the old entity is recorded with its table, the new one neither recorded nor stored."""
    renamed: dict[str, str] = {}
    for kind, fqn in sorted(old_defs):
        if kind != "entity" or fqn in graph.entities or table_name(fqn) not in columns:
            continue
        new = graph.migrations.renamed_entity(fqn, graph.entities)
        if (
            new is not None
            and new not in renamed
            and ("entity", new) not in old_defs
            and graph.entities[new].table_name not in columns
        ):
            renamed[new] = fqn
    return renamed
