"""The one reader of projections: lists (filtered, sorted, searched, paged or whole) and
details (docs/http.md, "Lists" and "Read access"), with the reader's row scope applied in the
same statement.

A v0.1 request (no list parameter, ViewSchema 1.0.0) is the plain list query
(:func:`plain_query`: every row of the tenant in id order), read the same way as any other.
Every read is one short statement keyed on the last row sent (keyset pagination over the sort
keys and ``id``): a page is one statement (one row more than the page tells whether another
follows); a list without a page size is read chunk by chunk with the same statement, each
chunk its own statement, so no connection or transaction is held while the client reads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from host.graph.model import CompiledProjection, Graph
from host.query.conditions import Clause, Condition
from host.query.cursor import CursorCodec, KeysetValue
from host.query.params import ListQuery, plain_query
from host.query.spec import ID_COLUMN, Column, Facet, ListSpec, entity_column, list_spec
from host.storage.database import Storage
from host.storage.listsql import count_list, select_list
from host.storage.rows import RowRenderer, field_renderer
from host.storage.schema import Schema
from host.storage.search import frequency_probe, is_frequent

__all__ = [
    "DISPLAY_KEY",
    "ListRead",
    "ProjectionList",
    "ProjectionReads",
    "Rows",
    "displays",
    "projection_columns",
    "tally",
]

Rows = list[dict[str, Any]]
DISPLAY_KEY: Final = "_display"
"""The key of a row's display texts (reference field -> text)."""


def projection_columns(projection: CompiledProjection) -> tuple[str, ...]:
    """``id`` followed by the projection's fields, in order, without repeating ``id``."""
    return ("id", *(name for name in projection.definition.fields if name != "id"))


@dataclass(frozen=True, slots=True)
class ListRead:
    """A list as the route serves it: the ``first`` chunk of rendered rows, and ``rest``,
    the further chunks (``None`` when the first chunk is the whole list)."""

    first: Rows
    rest: AsyncIterator[Rows] | None


def tally(counted: int, limit: int) -> dict[str, Any]:
    """A count as documents show it: ``exact`` false when the count stopped at ``limit``
    rows (the value is then a lower bound)."""
    return {"value": min(counted, limit), "exact": counted <= limit}


def displays(projection: CompiledProjection) -> dict[str, str]:
    """Reference field shown -> the followed field naming its row (``project`` ->
    ``project.key``), for each reference whose target declares a display field."""
    entity = projection.entity
    found = {}
    for name in projection.definition.fields:
        target = entity.targets.get(name)
        if target is not None and target.definition.display is not None:
            found[name] = f"{name}.{target.definition.display}"
    return found


class ProjectionList:
    """A projection's list: its spec, table, selected columns and renderer; the columns
    ``displayed`` add the display texts of its references (``_display``, read when a query
    asks for them: :attr:`ListQuery.displays`)."""

    __slots__ = (
        "columns",
        "displayed",
        "displays",
        "followed",
        "positions",
        "render",
        "spec",
        "table",
    )

    def __init__(self, projection: CompiledProjection, table: str) -> None:
        self.spec = list_spec(projection)
        shown = projection_columns(projection)
        extra = tuple(name for name in self.spec.sortable if name not in shown)
        self.columns = (*shown, *extra)
        self.displays = displays(projection)
        texts = tuple(dict.fromkeys(n for n in self.displays.values() if n not in self.columns))
        self.displayed = (*self.columns, *texts)
        self.positions = {name: i for i, name in enumerate(self.displayed)}
        followed = [entity_column(projection.entity, name) for name in self.displayed]
        self.followed = tuple(c for c in followed if c is not None and c.via is not None)
        self.render = RowRenderer(projection.entity, shown)
        self.table = table

    def many(self, rows: Sequence[Sequence[Any]], displays: bool) -> Rows:
        """Rows rendered; with their ``_display`` texts if ``displays`` (they were read)."""
        items = self.render.many(rows)
        if self.displays and displays:
            at = {ref: self.positions[name] for ref, name in self.displays.items()}
            for item, row in zip(items, rows, strict=True):
                item[DISPLAY_KEY] = {ref: row[i] for ref, i in at.items()}
        return items


class ProjectionReads:
    """Every read of every projection of a graph, through :func:`select_list`."""

    def __init__(
        self, graph: Graph, storage: Storage, schema: Schema, cursors: CursorCodec
    ) -> None:
        self._storage = storage
        self.cursors = cursors
        self._reads = {
            fqn: ProjectionList(projection, schema.entities[projection.entity.fqn].name)
            for fqn, projection in graph.projections.items()
        }

    def spec(self, fqn: str) -> ListSpec:
        """The list declarations of projection ``fqn``."""
        return self._reads[fqn].spec

    async def _planned(self, read: ProjectionList, query: ListQuery) -> ListQuery:
        """``query`` with the text index driving its search or not (SQLite: not for a text
        so frequent that the list's own order finds a page sooner)."""
        if query.needle is None or not read.spec.search:
            return query
        probe = frequency_probe(self._storage.dialect, read.table, read.spec.search, query.needle)
        if probe is None:
            return query
        found = await self._storage.rows(*probe)
        frequent = bool(found) and is_frequent(int(found[0][0]))
        return replace(query, text_index=not frequent)

    async def _rows(
        self,
        read: ProjectionList,
        query: ListQuery,
        tenant: str,
        after: Sequence[KeysetValue] | None,
        limit: int,
    ) -> Sequence[Sequence[Any]]:
        shown = read.displayed if query.displays else read.columns
        sql, params = select_list(
            self._storage.dialect,
            read.table,
            shown,
            query,
            search=read.spec.search,
            id_column=ID_COLUMN,
            tenant=tenant,
            after=after,
            limit=limit,
            followed=[c for c in read.followed if c.name in shown],
        )
        return await self._storage.rows(sql, params)

    @staticmethod
    def _keyset(read: ProjectionList, query: ListQuery, row: Sequence[Any]) -> list[KeysetValue]:
        values: list[KeysetValue] = []
        for key in query.sort:
            value = row[read.positions[key.column.name]]
            values.append(key.column.type.keyset_value(value))
        values.append(row[0])
        return values

    async def page(
        self, projection: CompiledProjection, tenant: str, query: ListQuery, page_size: int
    ) -> tuple[Rows, str | None]:
        """One page (one statement) and the cursor of the next one (``None`` on the last)."""
        read = self._reads[projection.fqn]
        query = await self._planned(read, query)
        rows = await self._rows(read, query, tenant, query.after, page_size + 1)
        if len(rows) <= page_size:
            return read.many(rows, query.displays), None
        rows = rows[:page_size]
        cursor = self.cursors.encode(query.binding, self._keyset(read, query, rows[-1]))
        return read.many(rows, query.displays), cursor

    async def counts(
        self, projection: CompiledProjection, tenant: str, query: ListQuery, limit: int
    ) -> dict[str, Any]:
        """What ``count=true`` and ``facet=`` ask, as the document's keys (``count``,
        ``facets``), under the same filters, search and row scope as the rows. Each statement
        reads at most ``limit + 1`` rows: beyond ``limit`` a count is a lower bound marked
        ``exact: false`` (docs/http.md, "Counts and facets")."""
        read = self._reads[projection.fqn]
        query = await self._planned(read, query)
        answer: dict[str, Any] = {}
        if query.count:
            rows = await self._count(read, query, tenant, None, limit)
            answer["count"] = tally(int(rows[0][0]) if rows else 0, limit)
        if query.facets:
            facets: dict[str, Any] = {}
            for facet in query.facets:
                rows = await self._count(read, query, tenant, facet, limit)
                render: Callable[[Any], Any] = (
                    _bucket_start
                    if facet.bucket is not None
                    else read.render.renderers.get(facet.column.name)
                    or field_renderer(projection.entity, facet.column.name)
                )
                values = [(render(value), int(n)) for value, n in rows]
                total = sum(n for _, n in values)
                values.sort(key=_facet_order(facet.column))
                facets[facet.name] = {
                    "exact": total <= limit,
                    "values": [{"value": v, "count": n} for v, n in values],
                }
            answer["facets"] = facets
        return answer

    async def _count(
        self,
        read: ProjectionList,
        query: ListQuery,
        tenant: str,
        facet: Facet | None,
        limit: int,
    ) -> Sequence[Sequence[Any]]:
        sql, params = count_list(
            self._storage.dialect,
            read.table,
            query,
            search=read.spec.search,
            tenant=tenant,
            facet=facet,
            limit=limit + 1,
        )
        return await self._storage.rows(sql, params)

    async def one(
        self,
        projection: CompiledProjection,
        tenant: str,
        subject: str,
        scope: tuple[Clause, ...],
        *,
        displays: bool = False,
    ) -> dict[str, Any] | None:
        """The row ``subject`` of the tenant if it matches ``scope``, else ``None`` (a row
        out of scope reads exactly like an unknown one); ``displays``: with its display
        texts."""
        read = self._reads[projection.fqn]
        by_id = (Condition(ID_COLUMN, "eq", (subject,)),)
        query = plain_query(scope, conditions=by_id, displays=displays)
        rows = await self._rows(read, query, tenant, None, 1)
        return read.many(rows, displays)[0] if rows else None

    async def every_row(
        self, projection: CompiledProjection, tenant: str, query: ListQuery, chunk_size: int
    ) -> ListRead:
        """Every matching row: the first chunk and, when there is more, an iterator of the
        remaining chunks, each read by its own statement when the client wants it (so no
        connection is held between them). A chunk is consistent by itself: every row that
        exists for the whole read appears exactly once, in order."""
        read = self._reads[projection.fqn]
        query = await self._planned(read, query)
        rows = await self._rows(read, query, tenant, query.after, chunk_size + 1)
        if len(rows) <= chunk_size:
            return ListRead(read.many(rows, query.displays), None)
        after = self._keyset(read, query, rows[chunk_size - 1])
        first = read.many(rows[:chunk_size], query.displays)
        return ListRead(first, self._rest(read, query, tenant, after, chunk_size))

    async def _rest(
        self,
        read: ProjectionList,
        query: ListQuery,
        tenant: str,
        after: list[KeysetValue],
        chunk_size: int,
    ) -> AsyncIterator[Rows]:
        while True:
            # One row more than a chunk tells whether another statement is needed.
            rows = await self._rows(read, query, tenant, after, chunk_size + 1)
            if not rows:
                return
            yield read.many(rows[:chunk_size], query.displays)
            if len(rows) <= chunk_size:
                return
            after = self._keyset(read, query, rows[chunk_size - 1])


def _bucket_start(prefix: str | None) -> str | None:
    """The first instant of a date bucket named by a prefix of the canonical datetime text
    (``2030``, ``2030-01``, ``2030-01-31``), as RFC 3339 UTC."""
    if prefix is None:
        return None
    return f"{prefix}{'-01-01'[len(prefix) - 4 :]}T00:00:00Z"


def _facet_order(column: Column) -> Any:
    """Facet values in the field's order (enum options as declared, ``false`` before
    ``true``, references by id), null last."""
    options = column.field.options

    def key(pair: tuple[Any, int]) -> tuple[int, Any]:
        value = pair[0]
        if value is None:
            return (2, 0)
        if options:
            return (0, options.index(value)) if value in options else (1, str(value))
        return (0, value)

    return key
