"""Storage behind one small interface: schema, units of work, reads."""

from host.storage import sql
from host.storage.database import Storage, StorageError, TransientConflict
from host.storage.schema import Schema, build_schema
from host.storage.tx import (
    Closing,
    NothingMatched,
    Row,
    Statement,
    StatementFailed,
    Tx,
    is_transient,
)

__all__ = [
    "Closing",
    "NothingMatched",
    "Row",
    "Schema",
    "Statement",
    "StatementFailed",
    "Storage",
    "StorageError",
    "TransientConflict",
    "Tx",
    "build_schema",
    "is_transient",
    "sql",
]
