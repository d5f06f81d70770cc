"""What the storage answers about where a database lives, so that no code outside
``host/storage/`` compares dialect names: ``database_file`` and ``Storage.is_new_file``."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.config import Settings
from host.storage.database import Storage, UnsupportedScheme, database_file


def test_a_sqlite_url_names_one_local_file_and_a_server_url_none() -> None:
    assert database_file("sqlite:///data/tessera.db") == Path("data/tessera.db")
    assert database_file("sqlite+aiosqlite:////srv/t.db") == Path("/srv/t.db")
    assert database_file("postgresql://postgres@127.0.0.1:5432/test") is None
    assert database_file("POSTGRES://db/app") is None


def test_another_scheme_is_refused_by_name() -> None:
    with pytest.raises(UnsupportedScheme, match=r"^unsupported scheme 'mysql'$"):
        database_file("mysql://db/app")
    assert issubclass(UnsupportedScheme, ValueError)


def test_only_a_missing_local_file_is_new(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    storage = Storage(Settings(database_url=f"sqlite:///{path}"))
    assert storage.is_new_file()
    path.touch()
    assert not storage.is_new_file()
    server = Storage(Settings(database_url="postgresql://postgres@127.0.0.1:5432/nowhere"))
    assert not server.is_new_file()
