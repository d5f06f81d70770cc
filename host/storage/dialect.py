"""The SQL of schema evolution that differs between SQLite and PostgreSQL, in one place.

``ALTER TABLE ... ADD COLUMN``, ``RENAME COLUMN`` and ``RENAME TO`` are spelt the same on
SQLite >= 3.25 and PostgreSQL; the differences are the identifier rules, the column types
(compiled by SQLAlchemy for each dialect) and the catalog queries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import sqlalchemy as sa

from host.storage.dialects import Dialect

__all__ = ["IDENTIFIER_MAX_LENGTH", "EvolutionDialect"]

IDENTIFIER_MAX_LENGTH: Final = 63
"""PostgreSQL truncates longer identifiers; SQLite has no limit. Generated names stay below."""


_SQLITE_COLUMNS: Final = (
    "SELECT m.name AS table_name, p.name AS column_name "
    "FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS p "
    "WHERE m.type = 'table' ORDER BY m.name, p.cid"
)
_POSTGRESQL_COLUMNS: Final = (
    "SELECT table_name, column_name FROM information_schema.columns "
    "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
)
_COLUMNS: Final[Mapping[str, str]] = {"sqlite": _SQLITE_COLUMNS, "postgresql": _POSTGRESQL_COLUMNS}


class EvolutionDialect:
    """Statements of schema evolution for one dialect (``sqlite`` or ``postgresql``)."""

    __slots__ = ("dialect", "name", "sql")

    def __init__(self, sql: Dialect) -> None:
        self.sql = sql
        """The dialect of the runtime's statements."""
        self.name = sql.name
        self.dialect = sql.engine

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
        return sa.text(_COLUMNS[self.name])

    def render(self, statement: sa.ClauseElement) -> str:
        """A Core statement as SQL text with its values inlined (for a printed plan)."""
        return str(statement.compile(dialect=self.dialect, compile_kwargs={"literal_binds": True}))
