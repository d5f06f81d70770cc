"""Reads for projections: a tenant's rows in id order, or one row by (tenant, id)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from host.graph.model import CompiledProjection, Graph
from host.runtime.rows import RowRenderer
from host.storage import Schema, Storage, sql


def projection_columns(projection: CompiledProjection) -> tuple[str, ...]:
    """``id`` followed by the projection's fields, in order, without repeating ``id``."""
    return ("id", *(name for name in projection.definition.fields if name != "id"))


@dataclass(frozen=True, slots=True)
class ListRead:
    """A list as the route serves it: the ``first`` chunk of rendered rows, and ``rest``,
    the further chunks (``None`` when the first chunk is the whole list)."""

    first: list[dict[str, Any]]
    rest: AsyncIterator[list[dict[str, Any]]] | None


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

    async def read_list(
        self, projection: CompiledProjection, tenant_id: str, chunk_size: int
    ) -> ListRead:
        """Every row of the tenant in id order: the first chunk of at most ``chunk_size``
        rendered rows, and the rest as further chunks read when they are wanted.

        Each chunk is one statement keyed on the last id read (keyset pagination), so no
        connection or transaction is held between chunks, however slowly they are consumed.
        A list that fits in one chunk is one statement, a consistent snapshot by itself. A
        longer list is consistent per chunk: every row that exists for the whole read
        appears exactly once, in id order, as it was when its chunk was read; a row created
        meanwhile appears if its id sorts after the chunk being read."""
        read = self._reads[projection.fqn]
        # One row more than a chunk tells whether the list goes on.
        rows = await self._storage.rows(read.first_page, (tenant_id, chunk_size + 1))
        if len(rows) <= chunk_size:
            return ListRead(read.render.many(rows) if rows else [], None)
        rest = self._chunks_after(read, tenant_id, rows[chunk_size - 1][0], chunk_size)
        return ListRead(read.render.many(rows[:chunk_size]), rest)

    async def _chunks_after(
        self, read: _CompiledRead, tenant_id: str, last_id: str, chunk_size: int
    ) -> AsyncIterator[list[dict[str, Any]]]:
        while True:
            rows = await self._storage.rows(read.next_page, (tenant_id, last_id, chunk_size + 1))
            if not rows:
                return
            yield read.render.many(rows[:chunk_size])
            if len(rows) <= chunk_size:
                return
            last_id = rows[chunk_size - 1][0]

    async def get_row(
        self, projection: CompiledProjection, tenant_id: str, subject_id: str
    ) -> dict[str, Any] | None:
        """The row ``subject_id`` of the tenant, or ``None``."""
        read = self._reads[projection.fqn]
        rows = await self._storage.rows(read.one, (tenant_id, subject_id))
        return read.render(rows[0]) if rows else None
