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
from functools import lru_cache
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
        found = await conn.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_name = $1",
            TICKET_TABLE,
        )
        columns, full = with_search_columns(rows, {r["column_name"] for r in found}, None)
        await conn.copy_records_to_table(TICKET_TABLE, records=full, columns=columns)
    finally:
        await conn.close()


@lru_cache(maxsize=1)
def searched_ticket_fields() -> tuple[str, ...]:
    """The ticket fields a list projection of the samples searches (the host keeps a folded
    shadow column of each, indexed by trigrams)."""
    from host.config import Settings
    from host.graph import build_graph
    from host.storage.search import searched_fields

    return searched_fields(build_graph(Settings())).get("helpdesk.ticket", ())


def with_search_columns(
    rows: Sequence[tuple[Any, ...]], present: set[str], first_key: int | None
) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """The columns and rows as the host writes them: each searched field's folded shadow
    column and, when ``first_key`` is given (SQLite), the row's ``_search_key`` numbered
    from it, so
    that the search index holds the seeded rows as it holds rows written through HTTP. Only
    the columns ``present`` in the table (the host adds them when it starts; a database only
    the hand-written baseline uses has none)."""
    from host.query.folding import search_fold
    from host.storage.search import KEY_COLUMN, shadow_column

    fields = [name for name in searched_ticket_fields() if shadow_column(name) in present]
    at = [TICKET_COLUMNS.index(name) for name in fields]
    columns = (*TICKET_COLUMNS, *(shadow_column(name) for name in fields))
    if first_key is not None:
        columns += (KEY_COLUMN,)
    out = []
    for n, row in enumerate(rows):
        shadows = tuple(search_fold(row[i]) if isinstance(row[i], str) else None for i in at)
        out.append((*row, *shadows, *(() if first_key is None else (first_key + n,))))
    return columns, out


def insert_rows(url: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert ticket rows (tuples in :data:`TICKET_COLUMNS` order) straight into the table,
    with the search columns the host would write (:func:`with_search_columns`)."""
    if url.startswith("sqlite"):
        from host.storage.search import KEY_COLUMN

        with closing(sqlite3.connect(sqlite_path(url), timeout=30)) as conn, conn:
            present = {r[1] for r in conn.execute(f"PRAGMA table_info({TICKET_TABLE})")}
            first_key = None
            if KEY_COLUMN in present:
                (top,) = conn.execute(f"SELECT coalesce(max({KEY_COLUMN}), 0) FROM {TICKET_TABLE}")
                first_key = top[0] + 1
            columns, full = with_search_columns(rows, present, first_key)
            marks = ", ".join("?" * len(columns))
            conn.executemany(
                f"INSERT INTO {TICKET_TABLE} ({', '.join(columns)}) VALUES ({marks})", full
            )
    else:
        asyncio.run(_copy_pg(url, rows))


def seed(urls: Sequence[str], tenant: str, count: int, state: str = "open") -> list[str]:
    """The same ``count`` rows into every database of ``urls``; return their ids."""
    rows = ticket_rows(tenant, count, state)
    for url in urls:
        insert_rows(url, rows)
    return [row[1] for row in rows]
