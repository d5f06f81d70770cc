"""Storage behind one small interface: schema, units of work, reads."""

from host.storage.database import Row, Storage, StorageError, TransientConflict, Tx
from host.storage.schema import Schema, build_schema

__all__ = ["Row", "Schema", "Storage", "StorageError", "TransientConflict", "Tx", "build_schema"]
