"""A random secret stored once in the database, shared by every process that opens it.

Page cursors are authenticated with a key derived from it (:mod:`host.query.cursor`): every
worker and every instance on the same database accepts the cursors any of them issued, without
a setting to distribute, and nothing public (the graph hash, a tenant id) lets a client forge
one. Deleting the row rotates the key (every cursor in flight is then refused with a 400).
"""

from __future__ import annotations

import secrets
from typing import Final

from host.storage.database import SCHEMA_LOCK_KEY, Storage, Tx

__all__ = ["SECRETS_TABLE", "shared_secret"]

SECRETS_TABLE: Final = "tessera_secrets"


async def shared_secret(storage: Storage, name: str) -> bytes:
    """The secret ``name``, created (32 random bytes) by the first process that asks."""
    dialect = storage.dialect
    first, second = dialect.placeholders(2)
    lock = dialect.exclusive_lock(SCHEMA_LOCK_KEY)

    async def work(tx: Tx) -> bytes:
        if lock is not None:
            await tx.rows(lock)
        await tx.rows(
            f"CREATE TABLE IF NOT EXISTS {SECRETS_TABLE} "
            "(name TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
        await tx.rows(
            f"INSERT INTO {SECRETS_TABLE} (name, value) VALUES ({first}, {second}) "
            "ON CONFLICT (name) DO NOTHING",
            (name, secrets.token_hex(32)),
        )
        rows = await tx.rows(f"SELECT value FROM {SECRETS_TABLE} WHERE name = {first}", (name,))
        return bytes.fromhex(str(rows[0][0]))

    return await storage.transaction(work)
