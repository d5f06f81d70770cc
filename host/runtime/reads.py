"""Reads for projections: a tenant's rows in id order, or one row by (tenant, id)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from host.graph.model import CompiledProjection, Graph
from host.runtime.rows import RowRenderer
from host.storage import Schema, Storage, sql


def projection_columns(projection: CompiledProjection) -> tuple[str, ...]:
    """``id`` followed by the projection's fields, in order, without repeating ``id``."""
    return ("id", *(name for name in projection.definition.fields if name != "id"))


class _CompiledRead:
    """A projection's statements, written once (SQL text, see :mod:`host.storage.sql`)."""

    __slots__ = ("first_page", "next_page", "one", "render")

    def __init__(self, projection: CompiledProjection, table: str, dialect: str) -> None:
        columns = projection_columns(projection)
        self.render = RowRenderer(projection.entity, columns)
        self.first_page = sql.select_page(dialect, table, columns, False)
        self.next_page = sql.select_page(dialect, table, columns, True)
        self.one = sql.select_one(dialect, table, columns)


class ProjectionReader:
    """Selects only the columns a projection shows and renders them in read shape."""

    def __init__(self, graph: Graph, storage: Storage, schema: Schema) -> None:
        self._storage = storage
        self._reads = {
            fqn: _CompiledRead(
                projection, schema.entities[projection.entity.fqn].name, storage.dialect
            )
            for fqn, projection in graph.projections.items()
        }

    async def iter_chunks(
        self, projection: CompiledProjection, tenant_id: str, chunk_size: int
    ) -> AsyncGenerator[list[dict[str, Any]], None]:
        """Every row of the tenant in id order, as rendered chunks of at most ``chunk_size``
        rows, all read from one snapshot (keyset pagination on the primary key), so a large
        list never has to be held in memory at once."""
        read = self._reads[projection.fqn]
        render = read.render
        # One statement is a consistent snapshot by itself: a list that fits in one chunk
        # (the common case) needs no read transaction. One row more than a chunk tells
        # whether it fits; if not, everything is read again from one snapshot.
        rows = await self._storage.rows(read.first_page, (tenant_id, chunk_size + 1))
        if len(rows) <= chunk_size:
            if rows:
                yield render.many(rows)
            return
        del rows
        async with self._storage.read_snapshot() as snapshot:
            rows = await snapshot.rows(read.first_page, (tenant_id, chunk_size))
            while rows:
                yield render.many(rows)
                if len(rows) < chunk_size:
                    return
                rows = await snapshot.rows(read.next_page, (tenant_id, rows[-1][0], chunk_size))

    async def get_row(
        self, projection: CompiledProjection, tenant_id: str, subject_id: str
    ) -> dict[str, Any] | None:
        """The row ``subject_id`` of the tenant, or ``None``."""
        read = self._reads[projection.fqn]
        rows = await self._storage.rows(read.one, (tenant_id, subject_id))
        return read.render(rows[0]) if rows else None
