"""Keys that lead with the tenant: the rules a database distributed by ``tenant_id`` (Citus)
needs, the evolution that brings older system tables there, and the lint that checks a live
schema against the rules (``tessera check --distributed``).

The rules (docs/deploy.md, "Citus"): every table has a ``tenant_id`` column or is one of the
host's reference tables (:data:`~host.storage.schema.REFERENCE_TABLES`); every primary key
and unique key of a table with ``tenant_id`` includes it; a foreign key between two such
tables carries it on both sides.

Databases prepared before the keys led with the tenant have ``tessera_audit`` keyed by
``seq`` with ``id`` unique alone, and ``tessera_deliveries`` keyed by ``seq`` with
``(event_id, subscriber)`` unique. On PostgreSQL the startup evolution re-keys them
(``keys-tenant-led``, additive: no row changes, the same rows stay unique). SQLite keeps
``seq``, its rowid, as the key of both (a SQLite file is never distributed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa

from host.storage.database import Tx
from host.storage.dialect import EvolutionDialect
from host.storage.plan import Change, ChangeClass, Statement
from host.storage.schema import REFERENCE_TABLES, Schema

__all__ = ["Key", "distribution_problems", "key_changes", "read_keys", "statement_problems"]

TENANT: Final = "tenant_id"

_UNIQUE_KEYS: Final = """
SELECT t.relname AS table_name, i.relname AS key_name, x.indisprimary AS is_primary,
       ARRAY(SELECT a.attname FROM unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
             JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
             ORDER BY k.n) AS columns,
       EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid
               AND c.conrelid = t.oid) AS is_constraint
FROM pg_index x
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = current_schema() AND x.indisunique AND t.relkind IN ('r', 'p')
ORDER BY t.relname, i.relname
"""
_FOREIGN_KEYS: Final = """
SELECT t.relname AS table_name, c.conname AS key_name, r.relname AS referenced,
       ARRAY(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
             ORDER BY k.n) AS columns,
       ARRAY(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, n)
             JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum
             ORDER BY k.n) AS referenced_columns
FROM pg_constraint c
JOIN pg_class t ON t.oid = c.conrelid
JOIN pg_class r ON r.oid = c.confrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE c.contype = 'f' AND n.nspname = current_schema()
ORDER BY t.relname, c.conname
"""


@dataclass(frozen=True, slots=True)
class Key:
    """One primary or unique key of a table (PostgreSQL's catalog)."""

    table: str
    name: str
    primary: bool
    columns: tuple[str, ...]
    constraint: bool
    """A constraint (dropped with ``DROP CONSTRAINT``), not a bare unique index."""

    def describe(self) -> str:
        kind = "primary key" if self.primary else f"unique key {self.name}"
        return f"{kind} ({', '.join(self.columns)})"


async def read_keys(tx: Tx) -> list[Key]:
    """Every primary and unique key of the current schema (PostgreSQL)."""
    rows = await tx.fetch_all(sa.text(_UNIQUE_KEYS))
    return [
        Key(
            table=str(row["table_name"]),
            name=str(row["key_name"]),
            primary=bool(row["is_primary"]),
            columns=tuple(row["columns"]),
            constraint=bool(row["is_constraint"]),
        )
        for row in rows
    ]


def _wanted(table: sa.Table) -> list[tuple[str, bool, tuple[str, ...]]]:
    """(name, primary, columns) of every key the schema gives ``table``."""
    keys: list[tuple[str, bool, tuple[str, ...]]] = []
    for constraint in table.constraints:
        if not isinstance(constraint, (sa.PrimaryKeyConstraint, sa.UniqueConstraint)):
            continue
        columns = tuple(column.name for column in constraint.columns)
        primary = isinstance(constraint, sa.PrimaryKeyConstraint)
        keys.append((str(constraint.name or f"{table.name}_pkey"), primary, columns))
    return keys


async def key_changes(tx: Tx, dialect: EvolutionDialect, schema: Schema) -> list[Change]:
    """``keys-tenant-led`` changes (additive) for the system tables of an older database
    whose keys do not include ``tenant_id`` (PostgreSQL; nothing on SQLite)."""
    if not dialect.sql.tenant_led_order_keys:
        return []
    keys = await read_keys(tx)
    changes: list[Change] = []
    for table in (schema.audit, schema.deliveries):
        found = [key for key in keys if key.table == table.name]
        stale = [key for key in found if TENANT not in key.columns]
        if not stale:
            continue  # new keys already, or a table not created yet (it will have them)
        kept = {(key.name, key.columns) for key in found if key not in stale}
        index_drops = [f"DROP INDEX {dialect.quote(k.name)}" for k in stale if not k.constraint]
        clauses = [f"DROP CONSTRAINT {dialect.quote(k.name)}" for k in stale if k.constraint]
        for name, primary, columns in _wanted(table):
            if (name, columns) in kept:
                continue
            kind = "PRIMARY KEY" if primary else "UNIQUE"
            listed = ", ".join(dialect.quote(column) for column in columns)
            clauses.append(f"ADD CONSTRAINT {dialect.quote(name)} {kind} ({listed})")
        # One subcommand per ALTER TABLE: Citus refuses ADD CONSTRAINT beside others.
        alter = f"ALTER TABLE {dialect.quote(table.name)} "
        sql = (*index_drops, *(alter + clause for clause in clauses))
        changes.append(
            Change(
                kind="keys-tenant-led",
                change_class=ChangeClass.ADDITIVE,
                subject=f"table {table.name}",
                detail="keys without tenant_id: " + "; ".join(k.describe() for k in stale),
                outcome="every key includes tenant_id",
                sql=sql,
                operations=tuple(Statement(s) for s in sql),
            )
        )
    return changes


async def distribution_problems(tx: Tx, dialect: EvolutionDialect) -> list[str]:
    """What in the live schema (PostgreSQL) breaks the rules of a database distributed by
    ``tenant_id``, one line each; empty when it keeps them."""
    tables: dict[str, list[str]] = {}
    for row in await tx.fetch_all(dialect.columns_query()):
        tables.setdefault(str(row["table_name"]), []).append(str(row["column_name"]))
    tenanted = {name for name, columns in tables.items() if TENANT in columns}
    problems = [
        f"table {name}: no {TENANT} column, and not a reference table of the host "
        f"({', '.join(sorted(REFERENCE_TABLES))})"
        for name in sorted(tables)
        if name not in tenanted and name not in REFERENCE_TABLES
    ]
    by_table: dict[str, list[Key]] = {}
    for key in await read_keys(tx):
        by_table.setdefault(key.table, []).append(key)
    for name in sorted(tenanted):
        keys = by_table.get(name, [])
        if not any(key.primary for key in keys):
            problems.append(f"table {name}: no primary key")
        problems.extend(
            f"table {name}: {key.describe()} does not include {TENANT}"
            for key in keys
            if TENANT not in key.columns
        )
    for row in await tx.fetch_all(sa.text(_FOREIGN_KEYS)):
        table, referenced = str(row["table_name"]), str(row["referenced"])
        if table not in tenanted or referenced not in tenanted:
            continue  # to a reference table: allowed
        pairs: Sequence[tuple[str, str]] = list(
            zip(row["columns"], row["referenced_columns"], strict=True)
        )
        if (TENANT, TENANT) not in pairs:
            problems.append(
                f"table {table}: foreign key {row['key_name']} to {referenced} does not "
                f"carry {TENANT} on both sides"
            )
    return problems


_JOIN: Final = re.compile(
    r"\bJOIN\s+\S+\s+(\w+)\s+ON\s+(.*?)(?=\s+(?:WHERE|LEFT|JOIN|ORDER|GROUP|LIMIT)\b|$)"
)


def statement_problems(statements: Mapping[str, str]) -> list[str]:
    """What in the host's statements (name -> SQL) a database distributed by ``tenant_id``
    cannot run within one shard: a row lock (``FOR UPDATE``) not restricted to one tenant
    (``tenant_id = <parameter>``), a join whose condition does not equate the tenants."""
    problems: list[str] = []
    for name, sql in statements.items():
        if "FOR UPDATE" in sql and not re.search(r"\btenant_id = (\$\d+|\?)", sql):
            problems.append(f"statement {name!r}: locks rows of more than one tenant")
        for alias, condition in _JOIN.findall(sql):
            if not re.search(rf"\b{alias}\.tenant_id = \w+\.tenant_id\b", condition):
                problems.append(f"statement {name!r}: joins {alias} without its tenant_id")
    return problems
