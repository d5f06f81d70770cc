"""The text index of ``q``: folded copies of the searched fields, and a trigram index on them.

Every string field a list projection searches gets a *shadow column* on its entity's table,
``_fold_<field>``, holding :func:`~host.query.folding.search_fold` of the field's value. The
:class:`~host.storage.store.EntityStore` writes it with the field, in the same statement (so in
the action's transaction); the schema evolution adds it and backfills existing rows
(:func:`search_changes`). ``q`` is then a plain substring test on the shadow columns with the
folded search text, the same comparison on both backends, served by a trigram index:

* PostgreSQL: a ``pg_trgm`` GIN index on each shadow column; the test is ``LIKE '%text%'``
  (escaped), which the index serves for texts of 3 characters or more.
* SQLite: an FTS5 table with the ``trigram`` tokenizer per shadow column (SQLite 3.34 or
  later), kept in step by triggers, keyed on the integer ``_search_key`` of the row (entity
  tables have no rowid). A search of 3 characters or more asks the FTS5 table which keys hold
  the text, then checks each with ``instr``; shorter texts (the trigram index cannot serve
  them) and SQLite builds without FTS5 trigram scan the tenant's rows with ``instr``.

Both answer exactly the rows whose folded field contains the folded text, in the list's order.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Final

from host.errors import StartupError
from host.graph.model import Graph
from host.query.folding import search_fold
from host.query.spec import Column, list_spec
from host.storage import names
from host.storage.dialects import Dialect
from host.storage.names import FTS_TRIGGERS, MAX_IDENTIFIER, generated

__all__ = [
    "KEY_COLUMN",
    "SHADOW_PREFIX",
    "SearchUnavailable",
    "frequency_probe",
    "fts_table",
    "indexed_source",
    "is_frequent",
    "key_index",
    "refold_page",
    "search_condition",
    "searched_fields",
    "shadow_column",
    "shadow_values",
    "sqlite_trigram",
    "trigram_index",
]

SHADOW_PREFIX: Final = "_fold_"
KEY_COLUMN: Final = "_search_key"
"""SQLite only: the integer key of a row in its FTS5 tables."""
TRIGRAM: Final = 3
"""The shortest search text the trigram indexes serve (in characters, once folded)."""


class SearchUnavailable(StartupError):
    """The database cannot hold the text index (PostgreSQL without ``pg_trgm`` and without
    the right to create it)."""


def _bounded(name: str) -> str:
    if len(name) <= MAX_IDENTIFIER:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_IDENTIFIER - 9]}_{digest}"


def shadow_column(field: str) -> str:
    """The column holding the folded value of ``field``."""
    return _bounded(SHADOW_PREFIX + field)


def _indexed(field: str) -> str:
    """What the names of ``field``'s index objects say of it: its shadow column without the
    prefix (the field itself unless its name is long). A shadow column read from the catalog
    gives the same names as the field: ``shadow_column(_indexed(f)) == shadow_column(f)``."""
    return shadow_column(field)[len(SHADOW_PREFIX) :]


def trigram_index(table: str, field: str) -> str:
    """PostgreSQL: the GIN index of ``field``'s shadow column."""
    return generated(table, names.TRIGRAM, (_indexed(field),))


def fts_table(table: str, field: str) -> str:
    """SQLite: the FTS5 table indexing ``field``'s shadow column."""
    return generated(table, names.FTS, (_indexed(field),))


def key_index(table: str) -> str:
    """SQLite: the unique index of a table's ``_search_key``."""
    return generated(table, names.SEARCH_KEY)


@lru_cache(maxsize=1)
def sqlite_trigram() -> bool:
    """Whether this process's SQLite has FTS5 with the trigram tokenizer (3.34+)."""
    if sqlite3.sqlite_version_info < (3, 34, 0):
        return False
    connection = sqlite3.connect(":memory:")
    try:
        connection.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')")
    except sqlite3.Error:
        return False
    finally:
        connection.close()
    return True


def indexed(dialect: Dialect) -> bool:
    """Whether the backend keeps a trigram index (PostgreSQL always: ``pg_trgm`` is
    required; SQLite when its build has FTS5 trigram)."""
    return not dialect.embedded or sqlite_trigram()


def searched_fields(graph: Graph) -> dict[str, tuple[str, ...]]:
    """Entity FQN -> the fields some list projection searches, sorted."""
    fields: dict[str, set[str]] = {}
    for projection in graph.projections.values():
        for column in list_spec(projection).search:
            fields.setdefault(projection.entity.fqn, set()).add(column.name)
    return {fqn: tuple(sorted(names)) for fqn, names in fields.items()}


def shadow_values(fields: Iterable[str], values: Mapping[str, Any]) -> dict[str, Any]:
    """The shadow columns of the searched ``fields`` present in ``values`` (database values),
    folded."""
    return {
        shadow_column(name): search_fold(values[name]) if isinstance(values[name], str) else None
        for name in fields
        if name in values
    }


def _like_pattern(needle: str) -> str:
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _dollar_quoted(text: str) -> str:
    """``text`` as a PostgreSQL dollar-quoted literal, with a tag ``text`` does not hold."""
    tag = "q"
    while f"${tag}$" in text or text.endswith(f"${tag}"):
        tag += "q"
    return f"${tag}${text}${tag}$"


def _phrase(needle: str) -> str:
    return '"' + needle.replace('"', '""') + '"'


def search_condition(
    dialect: Dialect, table: str, search: Sequence[Column], needle: str, mark: Any
) -> str:
    """The ``WHERE`` part of ``q``: some searched field's folded value contains ``needle``
    (already folded). ``mark(value)`` binds a value and returns its placeholder, once per
    placeholder, in text order (``?`` binds by position on SQLite). On SQLite the FTS5
    index is used through :func:`indexed_source`."""
    if not dialect.embedded:
        # The pattern is written into the statement, not bound: PostgreSQL's plan of a
        # prepared statement with ``LIKE $n`` soon becomes generic, which cannot know that
        # the pattern's trigrams make the index the fast way (measured: 105 ms instead of
        # 4 ms for a rare text in 100,000 rows). Dollar quoting has no escapes at all.
        pattern = _dollar_quoted(_like_pattern(needle))
        parts = [f"{dialect.quote(shadow_column(c.name))} LIKE {pattern}" for c in search]
    else:
        parts = [
            f"instr({dialect.quote(shadow_column(c.name))}, {mark(needle)}) > 0" for c in search
        ]
    return "(" + " OR ".join(parts) + ")"


def indexed_source(
    dialect: Dialect, table: str, search: Sequence[Column], needle: str, mark: Any
) -> str | None:
    """SQLite with FTS5 trigram and a ``needle`` of 3 characters or more: the ``FROM`` clause
    reading the keys that hold the text from the FTS5 tables first, then their rows
    (``CROSS JOIN`` keeps that order in SQLite's planner); ``None`` otherwise. The rows are
    still checked by :func:`search_condition`, so the answer is the scan's."""
    if not dialect.embedded or len(needle) < TRIGRAM or not sqlite_trigram():
        return None
    q = dialect.quote
    selects = []
    for column in search:
        fts = q(fts_table(table, column.name))
        selects.append(
            f"SELECT rowid AS _found_key FROM {fts} WHERE {fts} MATCH {mark(_phrase(needle))}"
        )
    return (
        f"({' UNION '.join(selects)}) AS _found CROSS JOIN {q(table)} "
        f"ON {q(table)}.{q(KEY_COLUMN)} = _found._found_key"
    )


FREQUENT: Final = 1000
"""SQLite: a text held by this many rows of the table (every tenant) is *frequent*: a page
of it is found sooner by reading the tenant's rows in the list's order than by looking up
every row the FTS5 tables name."""


def is_frequent(found: int) -> bool:
    """Whether :func:`frequency_probe` found a frequent text."""
    return found >= FREQUENT


def frequency_probe(
    dialect: Dialect, table: str, search: Sequence[Column], needle: str
) -> tuple[str, list[object]] | None:
    """SQLite: the statement counting the rows holding ``needle`` up to :data:`FREQUENT`
    (reads at most that many keys of the FTS5 tables); ``None`` where the index does not
    drive reads (PostgreSQL's planner decides by itself)."""
    if not dialect.embedded or len(needle) < TRIGRAM or not sqlite_trigram():
        return None
    q = dialect.quote
    selects = [
        f"SELECT rowid FROM {q(fts_table(table, c.name))} WHERE "
        f"{q(fts_table(table, c.name))} MATCH ?"
        for c in search
    ]
    sql = f"SELECT count(*) FROM ({' UNION ALL '.join(selects)} LIMIT ?)"
    return sql, [*([_phrase(needle)] * len(search)), FREQUENT]


# -- DDL (run by the schema evolution) ----------------------------------------------------------


def sqlite_index_sql(dialect: Dialect, table: str, field: str) -> list[str]:
    """The FTS5 table of ``field``'s shadow column, its triggers, and its first fill. Only
    rows holding a value are indexed (a null is never found, and costs a write nothing)."""
    q = dialect.quote
    shadow, key, qt = q(shadow_column(field)), q(KEY_COLUMN), q(table)
    qf = q(fts_table(table, field))
    return [
        f"CREATE VIRTUAL TABLE {qf} USING fts5({shadow}, content={qt}, "
        f"content_rowid={key}, tokenize='trigram case_sensitive 1')",
        *sqlite_trigger_sql(dialect, table, field),
        f"INSERT INTO {qf}(rowid, {shadow}) SELECT {key}, {shadow} FROM {qt} "
        f"WHERE {shadow} IS NOT NULL",
    ]


def sqlite_trigger_sql(dialect: Dialect, table: str, field: str) -> list[str]:
    """The triggers keeping the FTS5 table of ``field`` in step with ``table``."""
    fts = fts_table(table, field)
    q = dialect.quote
    shadow, key, qt, qf = q(shadow_column(field)), q(KEY_COLUMN), q(table), q(fts)
    add = (
        f"INSERT INTO {qf}(rowid, {shadow}) SELECT new.{key}, new.{shadow} "
        f"WHERE new.{shadow} IS NOT NULL;"
    )
    drop = (
        f"INSERT INTO {qf}({qf}, rowid, {shadow}) SELECT 'delete', old.{key}, old.{shadow} "
        f"WHERE old.{shadow} IS NOT NULL;"
    )
    ai, ad, au = (q(fts + suffix) for suffix in FTS_TRIGGERS)
    return [
        f"CREATE TRIGGER {ai} AFTER INSERT ON {qt} BEGIN {add} END",
        f"CREATE TRIGGER {ad} AFTER DELETE ON {qt} BEGIN {drop} END",
        f"CREATE TRIGGER {au} AFTER UPDATE OF {shadow} ON {qt} BEGIN {drop} {add} END",
    ]


def sqlite_trigger_drops(dialect: Dialect, fts: str) -> list[str]:
    """Drop the triggers of the FTS5 table named ``fts`` (whatever named it)."""
    return [f"DROP TRIGGER IF EXISTS {dialect.quote(fts + suffix)}" for suffix in FTS_TRIGGERS]


def sqlite_drop_sql(dialect: Dialect, table: str, field: str) -> list[str]:
    """Drop the FTS5 table of ``field`` and its triggers."""
    fts = fts_table(table, field)
    return [*sqlite_trigger_drops(dialect, fts), f"DROP TABLE IF EXISTS {dialect.quote(fts)}"]


def sqlite_key_sql(dialect: Dialect, table: str) -> list[str]:
    """Number the rows of ``table`` (``_search_key``, added before) and index the key."""
    q = dialect.quote
    qt, key = q(table), q(KEY_COLUMN)
    return [
        f"UPDATE {qt} SET {key} = numbered.n FROM (SELECT tenant_id, id, "
        f"row_number() OVER (ORDER BY tenant_id, id) AS n FROM {qt}) AS numbered "
        f"WHERE {qt}.tenant_id = numbered.tenant_id AND {qt}.id = numbered.id",
        sqlite_key_index_sql(dialect, table),
    ]


def sqlite_key_index_sql(dialect: Dialect, table: str) -> str:
    """The unique index of ``table``'s ``_search_key``."""
    q = dialect.quote
    name, qt = q(key_index(table)), q(table)
    return f"CREATE UNIQUE INDEX IF NOT EXISTS {name} ON {qt} ({q(KEY_COLUMN)})"


def postgresql_index_sql(dialect: Dialect, table: str, field: str) -> str:
    """The ``pg_trgm`` GIN index of ``field``'s shadow column, without its nulls (a
    ``LIKE`` implies a value; measured: the index of a column of nulls alone otherwise cost
    every search 20 ms)."""
    q = dialect.quote
    shadow = q(shadow_column(field))
    return (
        f"CREATE INDEX IF NOT EXISTS {q(trigram_index(table, field))} ON {q(table)} "
        f"USING gin ({shadow} gin_trgm_ops) WHERE {shadow} IS NOT NULL"
    )


@lru_cache(maxsize=1024)
def with_search_key(dialect: Dialect, table: str, insert: str) -> str:
    """SQLite: ``insert`` (``INSERT INTO t (...) VALUES (...)``, from :func:`host.storage.sql.
    insert`) also numbering the new row's ``_search_key`` (writers are serialised on SQLite,
    and the key's unique index answers ``max`` at once). PostgreSQL: ``insert`` unchanged."""
    if not dialect.embedded:
        return insert
    q = dialect.quote
    head, _, tail = insert.rpartition(") VALUES (")
    key = f"(SELECT coalesce(max({q(KEY_COLUMN)}), 0) + 1 FROM {q(table)})"
    return f"{head}, {q(KEY_COLUMN)}) VALUES ({tail[:-1]}, {key})"


def refold_page(dialect: Dialect, table: str, shadow: str) -> str:
    """PostgreSQL: set ``shadow`` of a page of rows from three arrays (folded values, tenants,
    ids) in one statement."""
    q = dialect.quote
    return (
        f"UPDATE {q(table)} SET {q(shadow)} = page.folded FROM unnest($1::text[], $2::text[], "
        f"$3::text[]) AS page(folded, tenant_id, id) WHERE {q(table)}.tenant_id = page.tenant_id "
        f"AND {q(table)}.id = page.id"
    )
