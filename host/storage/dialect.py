"""The SQL of schema evolution that differs between SQLite and PostgreSQL, in one place.

``ALTER TABLE ... ADD COLUMN``, ``RENAME COLUMN`` and ``RENAME TO`` are spelt the same on
SQLite >= 3.25 and PostgreSQL; the differences are the identifier rules, the column types
(compiled by SQLAlchemy for each dialect) and the catalog queries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect

__all__ = ["IDENTIFIER_MAX_LENGTH", "EvolutionDialect"]

IDENTIFIER_MAX_LENGTH: Final = 63
"""PostgreSQL truncates longer identifiers; SQLite has no limit. Generated names stay below."""

_DIALECTS: Final[Mapping[str, Dialect]] = {
    "sqlite": sqlite.dialect(),
    "postgresql": postgresql.dialect(),  # type: ignore[no-untyped-call]
}

_SQLITE_COLUMNS: Final = (
    "SELECT m.name AS table_name, p.name AS column_name "
    "FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS p "
    "WHERE m.type = 'table' ORDER BY m.name, p.cid"
)
_POSTGRESQL_COLUMNS: Final = (
    "SELECT table_name, column_name FROM information_schema.columns "
    "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
)


class EvolutionDialect:
    """Statements of schema evolution for one dialect (``sqlite`` or ``postgresql``)."""

    __slots__ = ("dialect", "name")

    def __init__(self, name: str) -> None:
        if name not in _DIALECTS:
            raise ValueError(f"unsupported dialect {name!r}")
        self.name = name
        self.dialect = _DIALECTS[name]

    def quote(self, identifier: str) -> str:
        quoted: str = self.dialect.identifier_preparer.quote(identifier)
        return quoted

    def type_sql(self, column_type: sa.types.TypeEngine[Any]) -> str:
        return column_type.compile(dialect=self.dialect)

    def add_column(self, table: str, column: str, column_type: sa.types.TypeEngine[Any]) -> str:
        """A nullable column (every field column is nullable; the runtime checks values)."""
        return (
            f"ALTER TABLE {self.quote(table)} ADD COLUMN {self.quote(column)} "
            f"{self.type_sql(column_type)}"
        )

    def rename_column(self, table: str, old: str, new: str) -> str:
        return (
            f"ALTER TABLE {self.quote(table)} RENAME COLUMN {self.quote(old)} TO {self.quote(new)}"
        )

    def rename_table(self, old: str, new: str) -> str:
        return f"ALTER TABLE {self.quote(old)} RENAME TO {self.quote(new)}"

    def columns_query(self) -> sa.TextClause:
        """Rows (table_name, column_name) of every table of the database (current schema)."""
        return sa.text(_SQLITE_COLUMNS if self.name == "sqlite" else _POSTGRESQL_COLUMNS)

    def render(self, statement: sa.ClauseElement) -> str:
        """A Core statement as SQL text with its values inlined (for a printed plan)."""
        return str(statement.compile(dialect=self.dialect, compile_kwargs={"literal_binds": True}))
