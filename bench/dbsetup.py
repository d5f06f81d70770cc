"""Benchmark databases: the host's tables, created empty, and fast seeding by direct SQL.

The DDL comes from the host itself (``build_graph`` + ``build_schema``) so the baseline works
on exactly the host's table layout. Seeding bypasses every server: ``sqlite3`` executemany
for SQLite, ``COPY`` (asyncpg) for PostgreSQL.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ulid import ULID

TICKET_TABLE = "helpdesk__ticket"
TICKET_COLUMNS = (
    "tenant_id",
    "id",
    "created_at",
    "updated_at",
    "_version",
    "title",
    "description",
    "priority",
    "estimate_hours",
    "due_at",
    "billable",
    "budget",
    "state",
    "requester",
    "assignee",
    "resolution",
    "resolved_at",
)
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def host_ddl(dialect_name: str) -> list[str]:
    """CREATE TABLE / CREATE INDEX statements of the host's schema for the sample plugins."""
    from sqlalchemy.dialects import postgresql, sqlite
    from sqlalchemy.schema import CreateIndex, CreateTable

    from host.config import Settings
    from host.graph import build_graph
    from host.storage.dialects import dialect_named
    from host.storage.schema import build_schema

    dialect = sqlite.dialect() if dialect_name == "sqlite" else postgresql.dialect()
    schema = build_schema(build_graph(Settings()), dialect_named(dialect_name))
    statements = []
    for table in schema.metadata.sorted_tables:
        statements.append(str(CreateTable(table, if_not_exists=True).compile(dialect=dialect)))
        for index in table.indexes:
            statements.append(str(CreateIndex(index, if_not_exists=True).compile(dialect=dialect)))
    return statements


def now_db() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulids(count: int) -> list[str]:
    """``count`` distinct, increasing ULID strings (one random prefix, then a counter)."""
    prefix = str(ULID())[:16]
    out = []
    for n in range(count):
        digits = []
        for _ in range(10):
            n, rest = divmod(n, 32)
            digits.append(CROCKFORD[rest])
        out.append(prefix + "".join(reversed(digits)))
    return out


def ticket_rows(tenant: str, count: int, state: str = "open") -> list[tuple[Any, ...]]:
    """``count`` realistic ticket rows of ``tenant`` (ids in increasing ULID order)."""
    now = now_db()
    version = str(ULID())
    rows = []
    for n, row_id in enumerate(ulids(count)):
        due = "2030-01-02T03:04:00.000000Z" if n % 2 else None
        assignee = "bob" if n % 3 == 0 else None
        rows.append(
            (
                tenant,
                row_id,
                now,
                now,
                version,
                f"Ticket number {n}",
                "Something is broken" if n % 4 == 0 else None,
                ("low", "normal", "high")[n % 3],
                n % 40 if n % 5 else None,
                due,
                bool(n % 2),
                "12.50" if n % 7 == 0 else None,
                state,
                "alice",
                assignee,
                None,
                None,
            )
        )
    return rows


# -- SQLite --------------------------------------------------------------------------------


def sqlite_path(url: str) -> str:
    return url.split(":///", 1)[1]


def prepare_sqlite(path: Path) -> str:
    """Create an empty database file with the host's tables; return its URL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("PRAGMA journal_mode = WAL")
        for statement in host_ddl("sqlite"):
            conn.execute(statement)
    return f"sqlite:///{path}"


# -- PostgreSQL ----------------------------------------------------------------------------


def pg_url(database: str, base: str = PG_ADMIN_URL) -> str:
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path="/" + database))


async def _prepare_pg(database: str) -> str:
    import asyncpg

    admin = await asyncpg.connect(PG_ADMIN_URL)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{database}"')
    finally:
        await admin.close()
    url = pg_url(database)
    conn = await asyncpg.connect(url)
    try:
        for statement in host_ddl("postgresql"):
            await conn.execute(statement)
    finally:
        await conn.close()
    return url


def prepare_postgresql(database: str) -> str:
    """Drop and recreate ``database`` with the host's tables; return its URL."""
    return asyncio.run(_prepare_pg(database))


async def _drop_pg(database: str) -> None:
    import asyncpg

    admin = await asyncpg.connect(PG_ADMIN_URL)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    finally:
        await admin.close()


def drop_postgresql(database: str) -> None:
    asyncio.run(_drop_pg(database))


# -- seeding -------------------------------------------------------------------------------


async def _copy_pg(url: str, rows: Sequence[tuple[Any, ...]]) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.copy_records_to_table(TICKET_TABLE, records=rows, columns=TICKET_COLUMNS)
    finally:
        await conn.close()


def insert_rows(url: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert ticket rows (tuples in :data:`TICKET_COLUMNS` order) straight into the table."""
    if url.startswith("sqlite"):
        with closing(sqlite3.connect(sqlite_path(url), timeout=30)) as conn, conn:
            marks = ", ".join("?" * len(TICKET_COLUMNS))
            conn.executemany(
                f"INSERT INTO {TICKET_TABLE} ({', '.join(TICKET_COLUMNS)}) VALUES ({marks})",
                rows,
            )
    else:
        asyncio.run(_copy_pg(url, rows))


def seed(urls: Sequence[str], tenant: str, count: int, state: str = "open") -> list[str]:
    """The same ``count`` rows into every database of ``urls``; return their ids."""
    rows = ticket_rows(tenant, count, state)
    for url in urls:
        insert_rows(url, rows)
    return [row[1] for row in rows]
