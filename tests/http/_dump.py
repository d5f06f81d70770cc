"""Every table's rows (and, on PostgreSQL, every sequence's state) of a test's database, read
through a connection of its own: what "the database is byte-identical" compares.

One table is left out: the audit sealer's (``tessera_audit_seals``, docs/history.md). Only the
sealer's background loop writes it, on its own schedule, sealing records committed earlier;
no request does, and a round landing between two dumps is not the request's doing."""

from __future__ import annotations

import sqlite3

import asyncpg

from host.storage.auditchain import SEALS_TABLE
from host.storage.database import database_file

BACKGROUND_ONLY = frozenset({SEALS_TABLE})


async def dump(url: str) -> dict[str, list[tuple[object, ...]]]:
    """Table (or sequence) name -> its rows, sorted, as the driver returns them."""
    path = database_file(url)
    if path is not None:
        with sqlite3.connect(path) as conn:
            names = [
                row[0]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                )
            ]
            tables = {
                name: sorted(conn.execute(f'SELECT * FROM "{name}"'), key=repr)
                for name in names
                if name not in BACKGROUND_ONLY
            }
        conn.close()
        return tables
    conn = await asyncpg.connect(url)
    try:
        dumped: dict[str, list[tuple[object, ...]]] = {}
        for record in await conn.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
        ):
            name = record[0]
            if name in BACKGROUND_ONLY:
                continue
            rows = await conn.fetch(f'SELECT * FROM "{name}"')
            dumped[name] = sorted((tuple(row) for row in rows), key=repr)
        for record in await conn.fetch(
            "SELECT sequencename, last_value FROM pg_sequences WHERE schemaname = 'public'"
        ):
            dumped[f"sequence {record[0]}"] = [(record[1],)]
        return dumped
    finally:
        await conn.close()
