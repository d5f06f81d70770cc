"""Reads for projections: a tenant's rows in id order, or one row by (tenant, id)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import sqlalchemy as sa

from host.graph.model import CompiledProjection, Graph
from host.runtime.rows import RowRenderer
from host.storage import Schema, Storage


def projection_columns(projection: CompiledProjection) -> tuple[str, ...]:
    """``id`` followed by the projection's fields, in order, without repeating ``id``."""
    return ("id", *(name for name in projection.definition.fields if name != "id"))


class _CompiledRead:
    __slots__ = ("list_query", "one_query", "render")

    def __init__(self, projection: CompiledProjection, table: sa.Table) -> None:
        columns = projection_columns(projection)
        self.render = RowRenderer(projection.entity, columns)
        selected = [table.c[name] for name in columns]
        self.list_query = sa.select(*selected).order_by(table.c.id)
        self.one_query = sa.select(*selected)


class ProjectionReader:
    """Selects only the columns a projection shows and renders them in read shape."""

    def __init__(self, graph: Graph, storage: Storage, schema: Schema) -> None:
        self._storage = storage
        self._schema = schema
        self._reads = {
            fqn: _CompiledRead(projection, schema.entities[projection.entity.fqn])
            for fqn, projection in graph.projections.items()
        }

    async def list_rows(
        self, projection: CompiledProjection, tenant_id: str
    ) -> list[dict[str, Any]]:
        """Every row of the tenant, in id order."""
        read = self._reads[projection.fqn]
        table = self._schema.entities[projection.entity.fqn]
        rows = await self._storage.fetch_all(read.list_query.where(table.c.tenant_id == tenant_id))
        render = read.render
        return [render(row) for row in rows]

    async def iter_chunks(
        self, projection: CompiledProjection, tenant_id: str, chunk_size: int
    ) -> AsyncGenerator[list[dict[str, Any]], None]:
        """Every row of the tenant in id order, as rendered chunks of at most ``chunk_size``
        rows, all read from one snapshot (keyset pagination on the primary key), so a large
        list never has to be held in memory at once."""
        read = self._reads[projection.fqn]
        table = self._schema.entities[projection.entity.fqn]
        render = read.render
        query = read.list_query.where(table.c.tenant_id == tenant_id).limit(chunk_size)
        async with self._storage.read_snapshot() as snapshot:
            rows = await snapshot.fetch_all(query)
            while rows:
                yield [render(row) for row in rows]
                if len(rows) < chunk_size:
                    return
                rows = await snapshot.fetch_all(query.where(table.c.id > rows[-1]["id"]))

    async def get_row(
        self, projection: CompiledProjection, tenant_id: str, subject_id: str
    ) -> dict[str, Any] | None:
        """The row ``subject_id`` of the tenant, or ``None``."""
        read = self._reads[projection.fqn]
        table = self._schema.entities[projection.entity.fqn]
        row = await self._storage.fetch_one(
            read.one_query.where(table.c.tenant_id == tenant_id, table.c.id == subject_id)
        )
        return None if row is None else read.render(row)
