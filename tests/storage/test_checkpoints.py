"""SQLite's WAL checkpoints run off the writer (host/storage/checkpoints.py; docs/deploy.md):
the writer never checkpoints inside a commit, a connection of its own does, and the WAL stays
the size of what was written between two checkpoints instead of growing with every commit.
``TESSERA_SQLITE_CHECKPOINT_S=0`` gives SQLite's own checkpoints back."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import sqlalchemy as sa

from host.config import Settings
from host.storage.database import SQLiteStorage, Storage, Tx
from host.storage.tx import Closing

pytestmark = pytest.mark.skipif(
    os.environ.get("TESSERA_TEST_BACKEND") == "postgresql",
    reason="WAL checkpoints are SQLite's",
)

ROWS = 40
BLOB = 16_384
"""Bytes per row: four pages of the WAL at least, whatever the page size."""


async def _write_rows(storage: Storage, pause_s: float) -> None:
    await storage.transaction(
        lambda tx: tx.execute(sa.text("CREATE TABLE t (n INTEGER PRIMARY KEY, v BLOB)"))
    )

    async def insert(tx: Tx) -> Closing[None]:
        return Closing(None, (("INSERT INTO t (v) VALUES (?)", (os.urandom(BLOB),)),))

    for _ in range(ROWS):
        await storage.unit_of_work(insert)
        await asyncio.sleep(pause_s)


async def _writer_autocheckpoint(storage: SQLiteStorage) -> int:
    assert storage._writer is not None
    row = await storage._writer.fetch_one("PRAGMA wal_autocheckpoint")
    assert row is not None
    return int(row[0])


async def test_checkpoints_keep_the_wal_small_without_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    storage = Storage(Settings(database_url=f"sqlite:///{path}", sqlite_checkpoint_s=0.01))
    assert isinstance(storage, SQLiteStorage) and storage.checkpointer is not None
    await storage.connect()
    try:
        assert await _writer_autocheckpoint(storage) == 0  # never inside a commit
        await _write_rows(storage, pause_s=0.03)
        wal = Path(f"{path}-wal").stat().st_size
        # Without checkpoints the WAL would hold every row written; it was started over
        # after each checkpoint instead.
        assert wal < ROWS * BLOB / 4, wal
        assert storage.checkpointer.checkpoints >= ROWS / 4
        assert len(await storage.rows("SELECT n FROM t")) == ROWS
    finally:
        await storage.disconnect()
    assert not Path(f"{path}-wal").exists()  # the last connection checkpointed the rest


async def test_zero_gives_sqlites_own_checkpoints_back(tmp_path: Path) -> None:
    path = tmp_path / "own.db"
    storage = Storage(Settings(database_url=f"sqlite:///{path}", sqlite_checkpoint_s=0))
    assert isinstance(storage, SQLiteStorage) and storage.checkpointer is None
    await storage.connect()
    try:
        assert await _writer_autocheckpoint(storage) == 1000  # SQLite's default
        await _write_rows(storage, pause_s=0)
        assert len(await storage.rows("SELECT n FROM t")) == ROWS
    finally:
        await storage.disconnect()
