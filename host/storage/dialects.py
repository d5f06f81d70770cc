"""What differs between the SQL backends, as one object per backend.

Every piece of SQL whose spelling depends on the backend asks the :class:`Dialect` of the
storage: placeholders, identifier quoting, the code-point collation of text, ASCII folding
and substring search, the order of nulls, chaining two writes into one statement, and row
locking. Code outside ``host/storage/`` never asks which backend it runs on; it holds a
dialect and passes it on.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, ClassVar, Final

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect as SqlAlchemyDialect

__all__ = ["POSTGRESQL", "SQLITE", "Dialect", "dialect_named"]

_MARK: Final = re.compile(r"\$(\d+)")


class Dialect:
    """The SQL spelling of one backend. Instances are singletons (:data:`SQLITE`,
    :data:`POSTGRESQL`): statement caches key on them."""

    name: ClassVar[str]
    """``sqlite`` or ``postgresql`` (as in URLs, logs and ``/_ready``)."""
    chains_writes: ClassVar[bool] = False
    """Whether two writes can run as one statement (:meth:`chained`)."""
    embedded: ClassVar[bool] = False
    """Whether the database is a local file of this process's machine (no server)."""
    tenant_led_order_keys: ClassVar[bool] = True
    """Whether the tables ordered by a database-assigned ``seq`` are keyed by
    ``(tenant_id, seq)``, as a database distributed by tenant needs (docs/deploy.md,
    "Citus"); SQLite keeps ``seq`` alone, its rowid, the only key it assigns itself."""
    transaction_position: ClassVar[str] = "0"
    """SQL of the writing transaction's id, stored with each audit record (``xact``): a
    reader of the audit log never reads past the oldest transaction still open
    (:mod:`host.storage.auditlog`). ``0`` where writers are serialised (SQLite)."""
    oldest_open_transaction: ClassVar[str | None] = None
    """SQL answering the id below which every transaction has ended (``None``: writers are
    serialised, every committed record is final)."""
    relations: ClassVar[str]
    """SQL answering the names of the tables and indexes of the current schema."""

    def __init__(self, engine: SqlAlchemyDialect) -> None:
        self.engine = engine
        """SQLAlchemy's dialect: column types and the quoting rules of identifiers."""
        self._preparer = engine.identifier_preparer
        self._quoted: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<{self.name} dialect>"

    def quote(self, identifier: str) -> str:
        """``identifier`` quoted where the backend needs it (as SQLAlchemy spells it)."""
        quoted = self._quoted.get(identifier)
        if quoted is None:
            # Identifiers come from the graph and the schema: a bounded set, kept.
            quoted = self._quoted[identifier] = str(self._preparer.quote(identifier))
        return quoted

    def placeholder(self, position: int) -> str:
        """The placeholder of the ``position``-th parameter (from 1)."""
        raise NotImplementedError

    def placeholders(self, count: int) -> list[str]:
        """The placeholders of ``count`` positional parameters, in order."""
        return [self.placeholder(n) for n in range(1, count + 1)]

    def text_order(self, expression: str) -> str:
        """``expression`` (text) compared and ordered by code point."""
        return expression

    def fold(self, expression: str) -> str:
        """``expression`` with ASCII ``A-Z`` lowered and nothing else."""
        raise NotImplementedError

    def contains(self, expression: str, mark: str) -> str:
        """Whether the folded ``expression`` contains the (already folded) parameter."""
        raise NotImplementedError

    def order(self, expression: str, descending: bool, *, nullable: bool = True) -> str:
        """An ``ORDER BY`` key: nulls first ascending and last descending, on every backend
        (SQLite's own order)."""
        return f"{expression} DESC" if descending else expression

    def index_key(self, expression: str) -> str:
        """An index key ordered as :meth:`order` orders ascending."""
        return expression

    def chained(self, first: str, first_marks: int, second: str) -> str:
        """``first`` and ``second`` as one statement (only where :attr:`chains_writes`)."""
        raise NotImplementedError(f"{self.name} does not chain writes")

    def lock_rows(self, alias: str) -> str:
        """The clause that locks the selected rows of ``alias`` for this transaction and
        skips rows another one holds (empty where the database locks whole files)."""
        return ""

    def upsert(self) -> Any:
        """SQLAlchemy's ``INSERT ... ON CONFLICT`` construct of this backend."""
        raise NotImplementedError

    def exclusive_lock(self, key: int) -> str | None:
        """A statement holding the database-wide lock ``key`` until the transaction ends
        (``None`` where a writing transaction excludes the others already: SQLite's
        ``BEGIN IMMEDIATE``)."""
        return None


class _SQLite(Dialect):
    name = "sqlite"
    embedded = True
    relations = "SELECT name FROM sqlite_master WHERE type IN ('table', 'index')"
    tenant_led_order_keys = False

    def placeholder(self, position: int) -> str:
        return "?"

    def placeholders(self, count: int) -> list[str]:
        return ["?"] * count

    def fold(self, expression: str) -> str:
        # SQLite's lower() folds ASCII letters alone.
        return f"lower({expression})"

    def contains(self, expression: str, mark: str) -> str:
        return f"instr({self.fold(expression)}, {mark}) > 0"

    def upsert(self) -> Any:
        return sqlite.insert


class _PostgreSQL(Dialect):
    name = "postgresql"
    chains_writes = True
    transaction_position = "pg_current_xact_id()::text::bigint"
    oldest_open_transaction = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
    relations = (
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'i', 'I')"
    )

    def placeholder(self, position: int) -> str:
        return f"${position}"

    def text_order(self, expression: str) -> str:
        return f'({expression} COLLATE "C")'

    def fold(self, expression: str) -> str:
        # Under the "C" collation lower() folds ASCII letters alone (the database's default
        # collation would fold more).
        return f'lower({expression} COLLATE "C")'

    def contains(self, expression: str, mark: str) -> str:
        return f"strpos({self.fold(expression)}, {mark}) > 0"

    def order(self, expression: str, descending: bool, *, nullable: bool = True) -> str:
        if not nullable:  # never null (``id``): indexed in the default order
            return super().order(expression, descending)
        return f"{expression} DESC NULLS LAST" if descending else f"{expression} NULLS FIRST"

    def index_key(self, expression: str) -> str:
        return f"{expression} NULLS FIRST"

    def chained(self, first: str, first_marks: int, second: str) -> str:
        return _chained(first, first_marks, second)

    def lock_rows(self, alias: str) -> str:
        return f" FOR UPDATE OF {alias} SKIP LOCKED"

    def upsert(self) -> Any:
        return postgresql.insert

    def exclusive_lock(self, key: int) -> str | None:
        return f"SELECT pg_advisory_xact_lock({int(key)})"


@lru_cache(maxsize=1024)
def _chained(first: str, first_marks: int, second: str) -> str:
    """``WITH _first AS (first) second``, the second's ``$n`` moved past the first's
    ``first_marks`` parameters: two writes in one round trip. The first must not need to
    return rows (a data-modifying ``WITH`` without ``RETURNING`` runs all the same); the
    parameters are the first's, then the second's. Only for statements built by the host
    (no ``$`` inside literals)."""
    moved = _MARK.sub(lambda mark: f"${int(mark.group(1)) + first_marks}", second)
    return f"WITH _first AS ({first}) {moved}"


SQLITE: Final[Dialect] = _SQLite(sqlite.dialect())
POSTGRESQL: Final[Dialect] = _PostgreSQL(postgresql.dialect())  # type: ignore[no-untyped-call]
_BY_NAME: Final = {d.name: d for d in (SQLITE, POSTGRESQL)}


def dialect_named(name: str) -> Dialect:
    """The dialect called ``name`` (``sqlite`` or ``postgresql``)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unsupported dialect {name!r}") from None
