"""The names of the database objects the host derives from an entity's table and fields.

A plugin's names become identifiers (:mod:`host.graph.checks`): an entity's table is its FQN
with ``__`` between the segments (2 or more segments of ``[a-z][a-z0-9]*(_[a-z0-9]+)*``, at
most 50 characters), a field's column is its name (one such segment, at most 63). So no table
or column of a plugin contains ``___`` (three underscores), and none starts or ends with
``_``.

Every object the host names after a table is ``<table>___<kind>`` or
``<table>___<fields>___<kind>`` (:func:`generated`): the ``___`` makes it a name no entity
table can have, the kind (last) keeps two kinds apart, the fields (joined by ``__``, which no
field contains) keep two objects of one kind apart. A name longer than PostgreSQL's 63 bytes
keeps its head and ends ``____<16 hex digits of its SHA-256>___<kind>``: four underscores, which
no unshortened name holds. SQLite's FTS5 adds ``_data``, ``_idx``, ``_config`` and ``_docsize``
to the name of a full-text table (``..___fts_data``): no kind ends so. docs/schema-evolution.md,
"Names of generated objects", lists them, with the names earlier releases gave them and how a
start renames those (:mod:`host.storage.renames`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final

__all__ = [
    "ASIDE_PREFIX",
    "FTS",
    "FTS_TRIGGERS",
    "MARK",
    "MAX_IDENTIFIER",
    "PRIMARY_KEY",
    "REFERENCE",
    "SEARCH_KEY",
    "TRIGRAM",
    "generated",
    "list_kind",
    "primary_key",
    "reference_index",
]

ASIDE_PREFIX: Final = "_removed_"
"""How the name of a table or column kept aside by the schema evolution begins (no plugin's
name begins with ``_``)."""
MAX_IDENTIFIER: Final = 63
"""PostgreSQL's longest identifier in bytes (longer ones are cut); SQLite has no limit."""
MARK: Final = "___"
"""Between a generated name's table, fields and kind: in no plugin's table or field name."""
_SHORTENED: Final = "____"
_DIGEST: Final = 16

FTS: Final = "fts"
"""SQLite: the FTS5 table indexing a searched field's folded copy."""
FTS_TRIGGERS: Final = ("_ai", "_ad", "_au")
"""SQLite: the suffixes of the triggers keeping an FTS5 table in step (after insert, delete,
update), appended to the FTS5 table's name (triggers have a namespace of their own)."""
TRIGRAM: Final = "trgm"
"""PostgreSQL: the ``pg_trgm`` GIN index of a searched field's folded copy."""
SEARCH_KEY: Final = "key"
"""SQLite: the unique index of a searched table's ``_search_key``."""
REFERENCE: Final = "ref"
"""The index of a reference field, on (``tenant_id``, the field)."""
PRIMARY_KEY: Final = "pkey"
"""The primary key constraint of an entity table (PostgreSQL names its index so)."""


def generated(table: str, kind: str, fields: Sequence[str] = ()) -> str:
    """The name of the ``kind`` object of ``table`` over ``fields`` (module docstring)."""
    parts = [table, "__".join(fields), kind] if fields else [table, kind]
    name = MARK.join(parts)
    if len(name) <= MAX_IDENTIFIER:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_DIGEST]
    tail = f"{_SHORTENED}{digest}{MARK}{kind}"
    return name[: MAX_IDENTIFIER - len(tail)].rstrip("_") + tail


def list_kind(digest: str) -> str:
    """The kind of a list index whose sort expressions hash to ``digest`` (a new expression,
    new enum options for one, is a new index)."""
    return f"lst_{digest}"


def reference_index(table: str, field: str) -> str:
    """The index of reference ``field`` of ``table``."""
    return generated(table, REFERENCE, (field,))


def primary_key(table: str) -> str:
    """The primary key constraint of entity ``table``."""
    return generated(table, PRIMARY_KEY)
